/* Unit tests: cove-egress's privilege split (egress/nftd.c, confine.c).
 * The keeper's checks of a pin request (sizes, counts, ranges, the name)
 * and against the policy in force; and both halves' seccomp filters by
 * behaviour, in a forked child: the parser may open IPv4 sockets and no
 * netlink one, the keeper NETLINK_NETFILTER ones alone. */
#include <errno.h>
#include <linux/netlink.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "egress/confine.h"
#include "egress/nftd.h"
#include "unit.h"

static uint8_t buf[NFTD_MSG_MAX + 64];
static struct nftd_msg m;

static struct nft_pin pin(const char *a, uint8_t proto, uint16_t port, uint32_t t)
{
	struct nft_pin p = { .proto = proto, .port = port, .timeout_s = t };
	ck_assert_int_eq(netaddr_parse(a, &p.addr), 0);
	return p;
}

/* A good two-pin request for pinned.test into buf; its length. */
static size_t good(void)
{
	struct nft_pin p[2] = { pin("198.51.100.8", 6, 2222, 60),
		                pin("198.51.100.8", 17, 2222, 60) };
	long n = nftd_msg_build(7, "pinned.test", p, 2, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

#define PIN_OFF(i, field)                                                    \
	(sizeof(struct nftd_wire_hdr) + (i) * sizeof(struct nftd_wire_pin) + \
	 offsetof(struct nftd_wire_pin, field))

START_TEST(msg_round_trip)
{
	size_t n = good();
	ck_assert_uint_eq(n, sizeof(struct nftd_wire_hdr) + 2 * sizeof(struct nftd_wire_pin));
	ck_assert_int_eq(nftd_msg_parse(buf, n, &m), 0);
	ck_assert_uint_eq(m.seq, 7);
	ck_assert_str_eq(m.name, "pinned.test");
	ck_assert_uint_eq(m.npins, 2);
	ck_assert_int_eq(m.pins[1].proto, 17);
	ck_assert_int_eq(m.pins[1].port, 2222);
	ck_assert_uint_eq(m.pins[1].timeout_s, 60);
	ck_assert_int_eq(m.pins[0].addr.family, AF_INET);
	ck_assert_int_eq(m.pins[0].addr.a[3], 8);
	/* The most pins a request may carry. */
	static struct nft_pin many[NFTD_PINS_MAX + 1];
	for (size_t i = 0; i <= NFTD_PINS_MAX; i++)
		many[i] = pin("198.51.100.8", 6, (uint16_t)(1000 + i), 30);
	long l = nftd_msg_build(1, "a.test", many, NFTD_PINS_MAX, buf, sizeof(buf));
	ck_assert_int_eq(l, (long)NFTD_MSG_MAX);
	ck_assert_int_eq(nftd_msg_parse(buf, (size_t)l, &m), 0);
	ck_assert_int_eq(nftd_msg_build(1, "a.test", many, NFTD_PINS_MAX + 1, buf, sizeof(buf)),
	                 -EINVAL);
	ck_assert_int_eq(nftd_msg_build(1, "", many, 1, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(nftd_msg_build(1, "a.test", many, 0, buf, sizeof(buf)), -EINVAL);
}
END_TEST

/* Each corruption of a good request is refused. */
START_TEST(msg_refused)
{
	size_t n = good();
	/* sizes */
	ck_assert_int_eq(nftd_msg_parse(buf, 0, &m), -EINVAL);
	ck_assert_int_eq(nftd_msg_parse(buf, sizeof(struct nftd_wire_hdr) - 1, &m), -EINVAL);
	ck_assert_int_eq(nftd_msg_parse(buf, n - 1, &m), -EINVAL);
	ck_assert_int_eq(nftd_msg_parse(buf, n + 1, &m), -EINVAL);
	ck_assert_int_eq(nftd_msg_parse(buf, n - sizeof(struct nftd_wire_pin), &m), -EINVAL);

	struct {
		size_t off;
		uint32_t val;
		int width;
		const char *what;
	} bad[] = {
		{ offsetof(struct nftd_wire_hdr, type), 2, 4, "unknown type" },
		{ offsetof(struct nftd_wire_hdr, type), 0, 4, "type 0" },
		{ offsetof(struct nftd_wire_hdr, npins), 0, 4, "no pins" },
		{ offsetof(struct nftd_wire_hdr, npins), 3, 4, "more pins than sent" },
		{ offsetof(struct nftd_wire_hdr, npins), 1, 4, "fewer pins than sent" },
		{ offsetof(struct nftd_wire_hdr, npins), 0x80000001u, 4, "a wrapping count" },
		{ offsetof(struct nftd_wire_hdr, name), 0, 1, "empty name" },
		{ offsetof(struct nftd_wire_hdr, name), 'P', 1, "upper case" },
		{ offsetof(struct nftd_wire_hdr, name) + 3, ' ', 1, "a space" },
		{ offsetof(struct nftd_wire_hdr, name) + 3, 0xc3, 1, "a high byte" },
		{ offsetof(struct nftd_wire_hdr, name) + 20, 'x', 1, "bytes after the NUL" },
		{ offsetof(struct nftd_wire_hdr, name) + 11, '.', 1, "a trailing dot" },
		{ offsetof(struct nftd_wire_hdr, name) + 5, '.', 1, "an empty label" },
		{ offsetof(struct nftd_wire_hdr, name), '-', 1, "a leading dash" },
		{ offsetof(struct nftd_wire_hdr, pad), 1, 1, "padding" },
		{ PIN_OFF(1, family), AF_INET6, 1, "IPv6" },
		{ PIN_OFF(1, family), 0, 1, "family 0" },
		{ PIN_OFF(0, addr) + 4, 1, 1, "address bytes past the fourth" },
		{ PIN_OFF(1, addr) + 15, 1, 1, "the last address byte" },
		{ PIN_OFF(1, proto), 1, 1, "icmp" },
		{ PIN_OFF(0, proto), 0, 1, "proto 0" },
		{ PIN_OFF(1, port), 0, 2, "port 0" },
		{ PIN_OFF(0, timeout_s), NFTD_TIMEOUT_MIN - 1, 4, "a timeout too short" },
		{ PIN_OFF(1, timeout_s), NFTD_TIMEOUT_MAX + 1, 4, "a timeout too long" },
		{ PIN_OFF(1, timeout_s), 0xffffffffu, 4, "timeout 2^32-1" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		good();
		if (bad[i].width == 1) {
			buf[bad[i].off] = (uint8_t)bad[i].val;
		} else if (bad[i].width == 2) {
			uint16_t v = (uint16_t)bad[i].val;
			memcpy(buf + bad[i].off, &v, 2);
		} else {
			memcpy(buf + bad[i].off, &bad[i].val, 4);
		}
		ck_assert_msg(nftd_msg_parse(buf, n, &m) == -EINVAL, "accepted: %s", bad[i].what);
	}
	/* A name filling its field with no NUL. */
	good();
	memset(buf + offsetof(struct nftd_wire_hdr, name), 'a', NETRULE_NAME_MAX + 1);
	ck_assert_int_eq(nftd_msg_parse(buf, n, &m), -EINVAL);
	/* The bounds themselves pass. */
	good();
	uint32_t t = NFTD_TIMEOUT_MAX;
	memcpy(buf + PIN_OFF(0, timeout_s), &t, 4);
	uint16_t port = 65535;
	memcpy(buf + PIN_OFF(1, port), &port, 2);
	ck_assert_int_eq(nftd_msg_parse(buf, n, &m), 0);
}
END_TEST

START_TEST(pins_against_policy)
{
	char err[256];
	struct netpolicy p;
	netpolicy_init(&p, NETPOLICY_RULES);
	ck_assert_int_eq(netpolicy_add(&p, "pinned.test:2222", false, err, sizeof(err)), 0);
	ck_assert_int_eq(netpolicy_add(&p, "*.cdn.test:443", false, err, sizeof(err)), 0);
	ck_assert_int_eq(netpolicy_add(&p, "web.test", false, err, sizeof(err)), 0);
	struct netaddr host;
	ck_assert_int_eq(netaddr_parse("100.100.0.1", &host), 0);
	struct {
		const char *name, *addr;
		uint16_t port;
		int want;
	} cases[] = {
		{ "pinned.test", "198.51.100.8", 2222, 0 },
		{ "a.cdn.test", "198.51.100.9", 443, 0 },
		{ "pinned.test", "198.51.100.8", 2223, -EPERM },    /* another port */
		{ "other.test", "198.51.100.8", 2222, -EPERM },     /* another name */
		{ "web.test", "198.51.100.7", 80, -EPERM },         /* a rule with no port */
		{ "pinned.test", "10.0.0.5", 2222, -EPERM },        /* always denied */
		{ "pinned.test", "169.254.169.254", 2222, -EPERM }, /* always denied */
		{ "pinned.test", "100.100.0.1", 2222, -EPERM },     /* the host's own */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&m, 0, sizeof(m));
		strcpy(m.name, cases[i].name);
		m.npins = 1;
		m.pins[0] = pin(cases[i].addr, 6, cases[i].port, 60);
		ck_assert_msg(nftd_pins_allowed(&p, &host, 1, &m) == cases[i].want, "%s %s:%u",
		              cases[i].name, cases[i].addr, cases[i].port);
	}
	/* One bad pin refuses the request. */
	strcpy(m.name, "pinned.test");
	m.npins = 2;
	m.pins[0] = pin("198.51.100.8", 6, 2222, 60);
	m.pins[1] = pin("198.51.100.8", 6, 22, 60);
	ck_assert_int_eq(nftd_pins_allowed(&p, &host, 1, &m), -EPERM);
	m.npins = 1;
	ck_assert_int_eq(nftd_pins_allowed(&p, &host, 1, &m), 0);
	/* Outside mode rules nothing is pinned. */
	p.mode = NETPOLICY_OPEN;
	ck_assert_int_eq(nftd_pins_allowed(&p, &host, 1, &m), -EPERM);
	p.mode = NETPOLICY_NONE;
	ck_assert_int_eq(nftd_pins_allowed(&p, &host, 1, &m), -EPERM);
	netpolicy_free(&p);
}
END_TEST

/* In a child: confine as @role, then socket(@fam, @type, @proto).  The
 * child's end: 0 (allowed, a descriptor), 1 (allowed, refused by the
 * kernel), 2 (could not confine: no privilege here), or SIGSYS. */
static int probe(enum confine_role role, int fam, int type, int proto)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char err[256];
		if (geteuid() != 0 && unshare(CLONE_NEWUSER))
			_exit(2);
		if (confine(role, 0, err, sizeof(err)))
			_exit(2);
		int fd = socket(fam, type | SOCK_CLOEXEC, proto);
		/* Not _exit(): ASan's wrapper makes calls the filter kills. */
		syscall(SYS_exit_group, fd >= 0 ? 0 : 1);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		return WTERMSIG(st) == SIGSYS ? -SIGSYS : -1000 - WTERMSIG(st);
	return WEXITSTATUS(st);
}

START_TEST(filters)
{
	if (probe(CONFINE_PARSER, AF_INET, SOCK_DGRAM, 0) == 2) {
		fprintf(stderr, "filters: skipped (cannot confine here: no user namespace)\n");
		return;
	}
	ck_assert_int_eq(probe(CONFINE_PARSER, AF_INET, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(probe(CONFINE_PARSER, AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER), -SIGSYS);
	ck_assert_int_eq(probe(CONFINE_PARSER, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE), -SIGSYS);
	ck_assert_int_eq(probe(CONFINE_PARSER, AF_UNIX, SOCK_STREAM, 0), -SIGSYS);
	ck_assert_int_eq(probe(CONFINE_KEEPER, AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER), 0);
	ck_assert_int_eq(probe(CONFINE_KEEPER, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE), -SIGSYS);
	ck_assert_int_eq(probe(CONFINE_KEEPER, AF_NETLINK, SOCK_RAW, NETLINK_AUDIT), -SIGSYS);
	ck_assert_int_eq(probe(CONFINE_KEEPER, AF_INET, SOCK_STREAM, 0), -SIGSYS);
	ck_assert_int_eq(probe(CONFINE_KEEPER, AF_UNIX, SOCK_SEQPACKET, 0), -SIGSYS);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("egress_split");
	TCase *t = tcase_create("split");
	tcase_add_test(t, msg_round_trip);
	tcase_add_test(t, msg_refused);
	tcase_add_test(t, pins_against_policy);
	tcase_add_test(t, filters);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
