/* The snapshot state file: a small container of tagged sections.
 *
 *   header (32 bytes, little endian):
 *     u8  magic[8]      "COVESNAP"
 *     u32 version       SF_VERSION
 *     u32 nsections
 *     u64 payload_len   bytes after the header
 *     u32 payload_crc   CRC-32 (zlib) of those bytes
 *     u32 header_crc    CRC-32 of the 28 bytes before it
 *   sections, each:
 *     u32 tag | u32 instance | u64 len | data[len] | zero padding to 8 bytes
 *
 * Sections hold plain C structs of this host's ABI (KVM's and Cove's); the
 * version changes whenever one of them does.  A reader validates the
 * whole file (magic, version, CRCs, every section inside the payload)
 * before anything uses it; sf_find() then checks a section's exact size. */
#ifndef COVE_STATE_FILE_H
#define COVE_STATE_FILE_H

#include <stddef.h>
#include <stdint.h>

#define SF_MAGIC       "COVESNAP"
#define SF_VERSION     1
#define SF_HEADER_SIZE 32
/* Where each header field lies. */
#define SF_H_MAGIC       0
#define SF_H_VERSION     8
#define SF_H_NSECTIONS   12
#define SF_H_PAYLOAD_LEN 16
#define SF_H_PAYLOAD_CRC 24
#define SF_H_HEADER_CRC  28 /* covers the bytes before it */
#define SF_MAGIC_LEN     8
/* And in each section header (SF_SECTION_HDR bytes, then the data). */
#define SF_S_TAG        0
#define SF_S_INSTANCE   4
#define SF_S_LEN        8
#define SF_SECTION_HDR  16
#define SF_MAX_SECTIONS 4096
#define SF_MAX_SIZE     (64u << 20) /* a state file is kilobytes; refuse giants */

#define SF_TAG(a, b, c, d) \
	((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

/* A state file being built in memory. */
struct sf_writer {
	uint8_t *buf;
	size_t len, cap;
	uint32_t nsections;
	int error; /* first allocation failure; sticky */
};

void sf_writer_init(struct sf_writer *w);
/* Appends one section (copied). */
void sf_add(struct sf_writer *w, uint32_t tag, uint32_t instance, const void *data, size_t len);
/* Writes the file at dirfd/name atomically (a temporary name, fsync,
 * rename).  Returns 0 or -errno (including a failed sf_add). */
int sf_write_file(struct sf_writer *w, int dirfd, const char *name)
    __attribute__((warn_unused_result));
void sf_writer_free(struct sf_writer *w);

struct sf_section {
	uint32_t tag, instance;
	uint64_t len;
	const uint8_t *data;
};

struct sf_reader {
	uint8_t *buf; /* owned when read by sf_read_file */
	size_t len;
	struct sf_section *sections;
	uint32_t nsections;
};

/* Validates buf[0, len) (not copied; must outlive r).  On failure err
 * names the problem ("wrong magic", "checksum mismatch", ...). */
int sf_parse(struct sf_reader *r, const uint8_t *buf, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Reads and validates dirfd/name. */
int sf_read_file(struct sf_reader *r, int dirfd, const char *name, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void sf_reader_free(struct sf_reader *r);

/* The section (tag, instance) when its length is exactly len, else NULL. */
const void *sf_find(const struct sf_reader *r, uint32_t tag, uint32_t instance, size_t len);
/* The section (tag, instance) of any length, or NULL. */
const struct sf_section *sf_find_any(const struct sf_reader *r, uint32_t tag, uint32_t instance);

#endif
