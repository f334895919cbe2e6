/* The snapshot state file container and the VMM control API's parser. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "api.h"
#include "snapshot/state_file.h"
#include "unit.h"

static char dir[64];

static void mkdir_tmp(void)
{
	snprintf(dir, sizeof(dir), "/tmp/cove-sf-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static int dirfd_of(void)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	return fd;
}

static void rm_tmp(void)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/state", dir);
	unlink(p);
	rmdir(dir);
}

/* Writes a file with three sections and returns its bytes. */
static uint8_t *sample(size_t *len)
{
	struct sf_writer w;
	sf_writer_init(&w);
	uint64_t a = 0x1122334455667788ULL;
	char b[13] = "hello, state";
	sf_add(&w, SF_TAG('A', 'A', 'A', 'A'), 0, &a, sizeof(a));
	sf_add(&w, SF_TAG('B', 'B', 'B', 'B'), 7, b, sizeof(b));
	sf_add(&w, SF_TAG('C', 'C', 'C', 'C'), 0, NULL, 0);
	int fd = dirfd_of();
	ck_assert_int_eq(sf_write_file(&w, fd, "state"), 0);
	close(fd);
	sf_writer_free(&w);
	char p[128];
	snprintf(p, sizeof(p), "%s/state", dir);
	FILE *f = fopen(p, "rb");
	ck_assert_ptr_nonnull(f);
	uint8_t *buf = malloc(4096);
	*len = fread(buf, 1, 4096, f);
	fclose(f);
	return buf;
}

START_TEST(round_trip)
{
	mkdir_tmp();
	size_t len;
	uint8_t *buf = sample(&len);
	ck_assert_uint_eq(len % 8, 0);
	struct sf_reader r;
	char err[256];
	int fd = dirfd_of();
	ck_assert_int_eq(sf_read_file(&r, fd, "state", err, sizeof(err)), 0);
	close(fd);
	ck_assert_uint_eq(r.nsections, 3);
	const uint64_t *a = sf_find(&r, SF_TAG('A', 'A', 'A', 'A'), 0, sizeof(uint64_t));
	ck_assert_ptr_nonnull(a);
	ck_assert(*a == 0x1122334455667788ULL);
	ck_assert_ptr_null(sf_find(&r, SF_TAG('A', 'A', 'A', 'A'), 0, 4));  /* wrong size */
	ck_assert_ptr_null(sf_find(&r, SF_TAG('B', 'B', 'B', 'B'), 0, 13)); /* wrong instance */
	const char *b = sf_find(&r, SF_TAG('B', 'B', 'B', 'B'), 7, 13);
	ck_assert_ptr_nonnull(b);
	ck_assert_str_eq(b, "hello, state");
	ck_assert_ptr_nonnull(sf_find_any(&r, SF_TAG('C', 'C', 'C', 'C'), 0));
	sf_reader_free(&r);
	free(buf);
	rm_tmp();
}
END_TEST

/* Every corruption is refused with a message naming it. */
static void expect_refused(const uint8_t *buf, size_t len, const char *word)
{
	struct sf_reader r;
	char err[256] = "";
	ck_assert_int_lt(sf_parse(&r, buf, len, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, word), "'%s' lacks '%s'", err, word);
}

START_TEST(corruptions_refused)
{
	mkdir_tmp();
	size_t len;
	uint8_t *buf = sample(&len);
	uint8_t *c = malloc(len);

	expect_refused(buf, 10, "truncated");
	expect_refused(buf, len - 8, "truncated");
	memcpy(c, buf, len);
	c[0] ^= 1;
	expect_refused(c, len, "magic");
	memcpy(c, buf, len);
	c[8] = 99; /* version, header CRC now wrong too */
	expect_refused(c, len, "checksum");
	memcpy(c, buf, len);
	c[len - 9] ^= 0x40; /* payload byte */
	expect_refused(c, len, "checksum");
	/* A section longer than the file, with valid CRCs. */
	memcpy(c, buf, len);
	c[32 + 8] = 0xff;
	c[32 + 9] = 0xff;
	/* Recompute both CRCs so the section check is what refuses it. */
	uint32_t pc = (uint32_t)crc32(crc32(0, NULL, 0), c + 32, (unsigned)(len - 32));
	memcpy(c + 24, &pc, 4);
	uint32_t hc = (uint32_t)crc32(crc32(0, NULL, 0), c, 28);
	memcpy(c + 28, &hc, 4);
	expect_refused(c, len, "past the end");
	free(c);
	free(buf);
	rm_tmp();
}
END_TEST

START_TEST(read_file_errors)
{
	mkdir_tmp();
	struct sf_reader r;
	char err[256];
	int fd = dirfd_of();
	ck_assert_int_lt(sf_read_file(&r, fd, "state", err, sizeof(err)), 0);
	ck_assert(strstr(err, "cannot open"));
	close(fd);
	rm_tmp();
}
END_TEST

START_TEST(api_bad_requests)
{
	char out[512];
	vmm_api_handle(NULL, "not json", -1, out, sizeof(out));
	ck_assert(strstr(out, "\"ok\":false") && strstr(out, "not a JSON object"));
	vmm_api_handle(NULL, "[1,2]", -1, out, sizeof(out));
	ck_assert(strstr(out, "not a JSON object"));
	vmm_api_handle(NULL, "{\"op\":5}", -1, out, sizeof(out));
	ck_assert(strstr(out, "no \\\"op\\\""));
	vmm_api_handle(NULL, "{\"op\":\"status\"}", -1, out, sizeof(out));
	ck_assert(strstr(out, "no VM"));
	vmm_api_handle(NULL, "{\"op\":\"snapshot\",\"dir\":\"/x\",\"dirfd\":true}", -1, out,
	               sizeof(out));
	ck_assert(strstr(out, "\"ok\":false"));
	ck_assert(out[strlen(out) - 1] == '\n');
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("snapshot");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, corruptions_refused);
	tcase_add_test(tc, read_file_errors);
	tcase_add_test(tc, api_bad_requests);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
