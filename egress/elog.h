/* The egress log: one JSON line per decision on log_fd (net-contract.md):
 * time, proto, dst, port, name, rule, verdict, via, bytes; connection
 * lines add bytes_out (guest to server) and bytes_in. */
#ifndef COVE_EGRESS_ELOG_H
#define COVE_EGRESS_ELOG_H

#include <stdbool.h>
#include <stdint.h>

#include "netrule.h"

struct elog_rec {
	const char *proto;         /* "tcp", "udp", "dns", ... */
	const struct netaddr *dst; /* NULL: null */
	int port;                  /* -1: null */
	const char *name;          /* NULL: null */
	const char *rule;          /* NULL: null */
	bool allow;
	const char *via;             /* "proxy", "dns", "direct", "publish" */
	int64_t bytes_out, bytes_in; /* -1: not a connection (bytes null) */
	/* Credential injection (egress/mitm.c), both omitted when NULL:
	 * "proxy_rule" (the rule's name, with "headers":"[redacted]" when it
	 * injected), "note" (why a request was refused). */
	const char *inject;
	bool injected;
	const char *note;
	/* "src", omitted when NULL: the source a dropped frame claimed
	 * (via "nic", tap0's ingress guard). */
	const struct netaddr *src;
};

/* elog_rule_text() - @r's canonical text into @buf (for .rule); NULL if
 * @r is NULL. */
const char *elog_rule_text(const struct netrule *r, char *buf, size_t len);

/* elog_format_time() - "2026-12-01T15:00:00.123Z" for @ms since the epoch. */
void elog_format_time(int64_t ms, char *buf, size_t len);

/* The log's cap, as cove-vmm caps its console file: a guest that floods
 * refused connections must not fill the host's disk.  Past it nothing is
 * written but one line {"time":..,"note":"egress.log reached its cap of
 * N bytes: ..."}; a reader that empties the file (below half the cap)
 * gets lines again.  ELOG_CAP_RESERVE bytes are kept for that line. */
#define ELOG_MAX_BYTES   (16ULL << 20)
#define ELOG_CAP_RESERVE 256

/* elog_write() - append one line to @fd (-1: nowhere), within
 * ELOG_MAX_BYTES when @fd is a regular file.  A failed write is dropped:
 * the log must never stop the traffic it records.
 * #syscalls: write clock_gettime fstat */
void elog_write(int fd, const struct elog_rec *r);

/* elog_write_capped() - elog_write() with the cap @cap bytes (0: none). */
void elog_write_capped(int fd, const struct elog_rec *r, uint64_t cap);

#endif
