/* Unit tests: the wire codec (common/proto.c) and the JSON helpers
 * (common/proto_json.c): header layout and validation, the incremental reader,
 * blocking send/receive over sockets and pipes, stream ends and errors. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "proto.h"
#include "proto_json.h"
#include "unit.h"

static void sockpair(int sv[2])
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

START_TEST(hdr_layout)
{
	struct proto_hdr h = {
		.len = 0x01020304, .type = PROTO_EXEC, .flags = 0xa0b, .id = 0xdeadbeef
	};
	uint8_t b[PROTO_HDR_SIZE];
	proto_hdr_encode(b, &h);
	static const uint8_t want[PROTO_HDR_SIZE] = { 4,    3,    2,    1,    10,   0,
		                                      0x0b, 0x0a, 0xef, 0xbe, 0xad, 0xde };
	ck_assert_mem_eq(b, want, sizeof(want));
	b[0] = 0; /* len 0x01020300: over the limit */
	struct proto_hdr d;
	ck_assert_int_eq(proto_hdr_decode(b, &d), -EMSGSIZE);
	h.len = PROTO_MAX_PAYLOAD;
	proto_hdr_encode(b, &h);
	ck_assert_int_eq(proto_hdr_decode(b, &d), 0);
	ck_assert_uint_eq(d.len, PROTO_MAX_PAYLOAD);
	ck_assert_uint_eq(d.type, PROTO_EXEC);
	ck_assert_uint_eq(d.flags, 0xa0b);
	ck_assert_uint_eq(d.id, 0xdeadbeef);
	h.len = PROTO_MAX_PAYLOAD + 1;
	proto_hdr_encode(b, &h);
	ck_assert_int_eq(proto_hdr_decode(b, &d), -EMSGSIZE);
	h.len = 0;
	h.type = 99;
	proto_hdr_encode(b, &h);
	ck_assert_int_eq(proto_hdr_decode(b, &d), -EPROTO);
	ck_assert_uint_eq(d.type, 99); /* still decoded, for the ERROR's id */
	ck_assert_uint_eq(d.id, 0xdeadbeef);
}
END_TEST

START_TEST(type_tables)
{
	int known = 0;
	for (unsigned t = 0; t < 0x10000; t++)
		known += proto_type_known((uint16_t)t);
	/* + the detached processes' 40-47, SYMLINK, CA, DEFAULTS, USER, WATCH,
	 * WATCH_EVENT, FREEZE, THAW, PORT */
	ck_assert_int_eq(known, 23 + 8 + 4 + 4 + 1);
	ck_assert_int_eq(PROTO_PORT, 80); /* on the wire: never renumber */
	ck_assert(proto_type_is_json(PROTO_PORT));
	ck_assert_int_eq(PROTO_WATCH, 70); /* on the wire: never renumber */
	ck_assert_int_eq(PROTO_WATCH_EVENT, 71);
	ck_assert(proto_type_is_json(PROTO_WATCH) && proto_type_is_json(PROTO_WATCH_EVENT));
	ck_assert_int_eq(PROTO_FREEZE, 72);
	ck_assert_int_eq(PROTO_THAW, 73);
	ck_assert_int_eq(PROTO_CA, 50); /* on the wire: never renumber */
	ck_assert_int_eq(PROTO_SYMLINK, 48);
	ck_assert_int_eq(PROTO_DEFAULTS, 60);
	ck_assert_int_eq(PROTO_USER, 61);
	ck_assert(proto_type_is_json(PROTO_DEFAULTS));
	ck_assert(proto_type_known(29));
	ck_assert_int_eq(PROTO_PROC_START, 40); /* on the wire: never renumber */
	ck_assert_int_eq(PROTO_MOVE, 47);
	ck_assert(!proto_type_is_json(PROTO_PROC_INPUT)); /* u32 pid + raw bytes */
	ck_assert(proto_type_is_json(PROTO_PROC_ATTACH));
	ck_assert_int_eq(PROTO_RESTORED, 29); /* on the wire: never renumber */
	ck_assert(proto_type_is_json(PROTO_RESTORED));
	ck_assert(proto_type_is_json(PROTO_EXEC));
	ck_assert(proto_type_is_json(PROTO_ERROR));
	ck_assert(!proto_type_is_json(PROTO_STDIN));
	ck_assert(!proto_type_is_json(PROTO_STDOUT));
	ck_assert(!proto_type_is_json(PROTO_STDERR));
	ck_assert(!proto_type_is_json(PROTO_DATA));
	ck_assert(!proto_type_is_json(0));
	ck_assert(!proto_type_is_json(1000));
}
END_TEST

START_TEST(restored_frame)
{
	/* A header of the new type decodes, and its JSON payload travels. */
	struct proto_hdr h = { .len = 2, .type = PROTO_RESTORED, .id = 5 }, d;
	uint8_t b[PROTO_HDR_SIZE];
	proto_hdr_encode(b, &h);
	ck_assert_int_eq(proto_hdr_decode(b, &d), 0);
	ck_assert_uint_eq(d.type, PROTO_RESTORED);
	int sv[2];
	sockpair(sv);
	json_t *o = json_pack("{s:I, s:s, s:s, s:s}", "time_ns", (json_int_t)1700000000123456789LL,
	                      "hostname", "fork-1", "sandbox_id", "sb_1", "seed",
	                      "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(proto_send_json(sv[0], PROTO_RESTORED, 9, o), 0);
	json_decref(o);
	uint8_t *p;
	ck_assert_int_eq(proto_recv(sv[1], &d, &p), 0);
	ck_assert_uint_eq(d.type, PROTO_RESTORED);
	ck_assert_uint_eq(d.id, 9);
	char err[128];
	ck_assert_int_eq(proto_json_parse(p, d.len, &o, err, sizeof(err)), 0);
	ck_assert(json_integer_value(json_object_get(o, "time_ns")) == 1700000000123456789LL);
	ck_assert_str_eq(json_string_value(json_object_get(o, "hostname")), "fork-1");
	json_decref(o);
	free(p);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(send_recv_small)
{
	int sv[2];
	sockpair(sv);
	ck_assert_int_eq(proto_send(sv[0], PROTO_PING, 7, NULL, 0), 0);
	ck_assert_int_eq(proto_send(sv[0], PROTO_STDOUT, 8, "abc", 3), 0);
	struct proto_hdr h;
	uint8_t *p;
	ck_assert_int_eq(proto_recv(sv[1], &h, &p), 0);
	ck_assert_uint_eq(h.type, PROTO_PING);
	ck_assert_uint_eq(h.id, 7);
	ck_assert_uint_eq(h.len, 0);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(proto_recv(sv[1], &h, &p), 0);
	ck_assert_uint_eq(h.type, PROTO_STDOUT);
	ck_assert_uint_eq(h.len, 3);
	ck_assert_str_eq((char *)p, "abc"); /* NUL-terminated */
	free(p);
	close(sv[0]);
	ck_assert_int_eq(proto_recv(sv[1], &h, &p), -ECONNRESET);
	close(sv[1]);
}
END_TEST

/* The host's deadlines: a silent peer, a peer that stops mid-frame, and a
 * peer that stops reading all cost the deadline and no more. */
START_TEST(deadlines)
{
	int sv[2];
	sockpair(sv);
	struct proto_hdr h;
	uint8_t *p;
	int64_t t0 = mono_ms();
	ck_assert_int_eq(proto_recv_until(sv[1], &h, &p, t0 + 100), -ETIMEDOUT);
	int64_t took = mono_ms() - t0;
	ck_assert_int_ge(took, 100);
	ck_assert_int_lt(took, 2000);
	/* Half a header, then nothing. */
	ck_assert_int_eq(write(sv[0], "\x03\0\0\0\x0d", 5), 5);
	ck_assert_int_eq(proto_recv_until(sv[1], &h, &p, mono_ms() + 100), -ETIMEDOUT);
	close(sv[0]);
	close(sv[1]);
	/* A whole frame within the deadline. */
	sockpair(sv);
	ck_assert_int_eq(proto_send_until(sv[0], PROTO_STDOUT, 3, "abc", 3, mono_ms() + 1000), 0);
	ck_assert_int_eq(proto_recv_until(sv[1], &h, &p, mono_ms() + 1000), 0);
	ck_assert_str_eq((char *)p, "abc");
	free(p);
	/* Nobody reads: the send buffer fills, the deadline ends it. */
	uint8_t *big = calloc(1, PROTO_MAX_PAYLOAD);
	int r = 0;
	t0 = mono_ms();
	for (int i = 0; i < 64 && r == 0; i++)
		r = proto_send_until(sv[0], PROTO_DATA, 0, big, PROTO_MAX_PAYLOAD, mono_ms() + 100);
	ck_assert_int_eq(r, -ETIMEDOUT);
	ck_assert_int_lt(mono_ms() - t0, 10000);
	free(big);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

struct big_send {
	int fd;
	uint8_t *buf;
	int result;
	int delay_ms;
};

static void *big_sender(void *arg)
{
	struct big_send *b = arg;
	if (b->delay_ms) {
		struct timespec ts = { 0, b->delay_ms * 1000000L };
		nanosleep(&ts, NULL);
	}
	b->result = proto_send(b->fd, PROTO_DATA, 42, b->buf, PROTO_MAX_PAYLOAD);
	return NULL;
}

START_TEST(send_recv_max_nonblocking)
{
	int sv[2];
	sockpair(sv);
	/* Both ends non-blocking: the helpers must wait with poll(). */
	ck_assert_int_eq(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	struct big_send b = { .fd = sv[0], .buf = malloc(PROTO_MAX_PAYLOAD), .delay_ms = 50 };
	for (uint32_t i = 0; i < PROTO_MAX_PAYLOAD; i++)
		b.buf[i] = (uint8_t)(i * 2654435761u >> 24);
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, big_sender, &b), 0);
	struct proto_hdr h;
	uint8_t *p;
	ck_assert_int_eq(proto_recv(sv[1], &h, &p), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(b.result, 0);
	ck_assert_uint_eq(h.len, PROTO_MAX_PAYLOAD);
	ck_assert_uint_eq(h.id, 42);
	ck_assert_mem_eq(p, b.buf, PROTO_MAX_PAYLOAD);
	free(p);
	free(b.buf);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(send_over_limit)
{
	int sv[2];
	sockpair(sv);
	static uint8_t dummy[1];
	ck_assert_int_eq(proto_send(sv[0], PROTO_DATA, 0, dummy, PROTO_MAX_PAYLOAD + 1), -EMSGSIZE);
	ck_assert_int_eq(proto_send(sv[0], PROTO_DATA, 0, NULL, 5), -EINVAL);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(pipe_transport)
{
	int p[2];
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_eq(proto_send(p[1], PROTO_STDERR, 3, "xyz", 3), 0);
	close(p[1]);
	struct proto_hdr h;
	uint8_t *pl;
	ck_assert_int_eq(proto_recv(p[0], &h, &pl), 0);
	ck_assert_str_eq((char *)pl, "xyz");
	free(pl);
	ck_assert_int_eq(proto_recv(p[0], &h, &pl), -ECONNRESET);
	close(p[0]);
}
END_TEST

START_TEST(truncated_streams)
{
	uint8_t frame[PROTO_HDR_SIZE + 4];
	struct proto_hdr h = { .len = 4, .type = PROTO_DATA, .id = 1 };
	proto_hdr_encode(frame, &h);
	memcpy(frame + PROTO_HDR_SIZE, "data", 4);
	size_t cut[] = { 1, PROTO_HDR_SIZE - 1, PROTO_HDR_SIZE, PROTO_HDR_SIZE + 3 };
	for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		int sv[2];
		sockpair(sv);
		ck_assert_int_eq(write(sv[0], frame, cut[i]), (ssize_t)cut[i]);
		close(sv[0]);
		uint8_t *p = (uint8_t *)1;
		ck_assert_int_eq(proto_recv(sv[1], &h, &p), -ECONNABORTED);
		ck_assert_ptr_null(p);
		close(sv[1]);
	}
}
END_TEST

START_TEST(bad_header_on_stream)
{
	int sv[2];
	sockpair(sv);
	uint8_t b[PROTO_HDR_SIZE];
	struct proto_hdr h = { .len = 1u << 30, .type = PROTO_DATA, .id = 77 };
	proto_hdr_encode(b, &h);
	ck_assert_int_eq(write(sv[0], b, sizeof(b)), (ssize_t)sizeof(b));
	struct proto_hdr got;
	uint8_t *p;
	ck_assert_int_eq(proto_recv(sv[1], &got, &p), -EMSGSIZE);
	ck_assert_uint_eq(got.id, 77);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(peer_gone_is_epipe)
{
	/* SIGPIPE left at its default: proto_send must not raise it. */
	signal(SIGPIPE, SIG_DFL);
	int sv[2];
	sockpair(sv);
	close(sv[1]);
	ck_assert_int_eq(proto_send(sv[0], PROTO_PING, 0, "{}", 2), -EPIPE);
	close(sv[0]);
}
END_TEST

START_TEST(reader_feed_bytewise)
{
	/* Three frames, fed one byte at a time and then all at once. */
	uint8_t stream[3 * PROTO_HDR_SIZE + 5 + 2];
	size_t n = 0;
	struct proto_hdr hs[3] = { { .len = 5, .type = PROTO_STDIN, .id = 1 },
		                   { .len = 0, .type = PROTO_PING, .id = 2 },
		                   { .len = 2, .type = PROTO_EXEC, .id = 3 } };
	const char *pl[3] = { "hello", "", "{}" };
	for (int i = 0; i < 3; i++) {
		proto_hdr_encode(stream + n, &hs[i]);
		n += PROTO_HDR_SIZE;
		memcpy(stream + n, pl[i], hs[i].len);
		n += hs[i].len;
	}
	ck_assert_uint_eq(n, sizeof(stream));
	for (int mode = 0; mode < 2; mode++) {
		struct proto_reader r;
		proto_reader_init(&r);
		ck_assert(proto_reader_idle(&r));
		int got = 0;
		size_t off = 0;
		while (off < n) {
			size_t used, chunk = mode == 0 ? 1 : n - off;
			int e = proto_reader_feed(&r, stream + off, chunk, &used);
			ck_assert_int_ge(e, 0);
			off += used;
			if (e == 1) {
				struct proto_hdr h;
				uint8_t *p;
				proto_reader_take(&r, &h, &p);
				ck_assert_uint_eq(h.type, hs[got].type);
				ck_assert_uint_eq(h.id, hs[got].id);
				ck_assert_uint_eq(h.len, hs[got].len);
				if (h.len)
					ck_assert_mem_eq(p, pl[got], h.len);
				else
					ck_assert_ptr_null(p);
				free(p);
				got++;
			} else {
				ck_assert_uint_eq(used, chunk);
			}
		}
		ck_assert_int_eq(got, 3);
		ck_assert(proto_reader_idle(&r));
		proto_reader_reset(&r);
	}
}
END_TEST

START_TEST(reader_feed_bad)
{
	struct proto_reader r;
	proto_reader_init(&r);
	uint8_t b[PROTO_HDR_SIZE];
	struct proto_hdr h = { .len = 0, .type = 0, .id = 5 };
	proto_hdr_encode(b, &h);
	size_t used;
	ck_assert_int_eq(proto_reader_feed(&r, b, sizeof(b), &used), -EPROTO);
	ck_assert_uint_eq(r.hdr_dec.id, 5);
	proto_reader_reset(&r);
	/* A partial frame left in the reader is freed by reset (LSan checks). */
	h = (struct proto_hdr){ .len = 100, .type = PROTO_DATA };
	proto_hdr_encode(b, &h);
	ck_assert_int_eq(proto_reader_feed(&r, b, sizeof(b), &used), 0);
	ck_assert(!proto_reader_idle(&r));
	proto_reader_reset(&r);
}
END_TEST

/* ---- JSON helpers ------------------------------------------------------- */

static int parse(const char *s, json_t **o)
{
	char err[128];
	return proto_json_parse((const uint8_t *)s, (uint32_t)strlen(s), o, err, sizeof(err));
}

START_TEST(json_parse_rules)
{
	json_t *o;
	ck_assert_int_eq(parse("", &o), 0);
	ck_assert(json_is_object(o) && json_object_size(o) == 0);
	json_decref(o);
	ck_assert_int_eq(parse("{\"a\":1}", &o), 0);
	json_decref(o);
	ck_assert_int_eq(parse("[1]", &o), -EPROTO);
	ck_assert_ptr_null(o);
	ck_assert_int_eq(parse("{\"a\":", &o), -EPROTO);
	ck_assert_int_eq(parse("{\"a\":1,\"a\":2}", &o), -EPROTO);
	ck_assert_int_eq(parse("{\"a\":\"x\\u0000y\"}", &o), -EPROTO);
	ck_assert_int_eq(parse("{} trailing", &o), -EPROTO);
}
END_TEST

START_TEST(json_getters)
{
	json_t *o;
	ck_assert_int_eq(parse("{\"i\":5,\"b\":true,\"s\":\"x\",\"n\":null,\"f\":1.5}", &o), 0);
	int64_t i;
	bool b;
	const char *s;
	ck_assert_int_eq(proto_json_int(o, "i", 0, 10, -1, &i), 0);
	ck_assert_int_eq(i, 5);
	ck_assert_int_eq(proto_json_int(o, "i", 6, 10, -1, &i), -EINVAL);
	ck_assert_int_eq(proto_json_int(o, "missing", 0, 10, -1, &i), 0);
	ck_assert_int_eq(i, -1);
	ck_assert_int_eq(proto_json_int(o, "n", 0, 10, 3, &i), 0);
	ck_assert_int_eq(i, 3);
	ck_assert_int_eq(proto_json_int(o, "f", 0, 10, 3, &i), -EINVAL);
	ck_assert_int_eq(proto_json_int(o, "s", 0, 10, 3, &i), -EINVAL);
	ck_assert_int_eq(proto_json_bool(o, "b", false, &b), 0);
	ck_assert(b);
	ck_assert_int_eq(proto_json_bool(o, "i", false, &b), -EINVAL);
	ck_assert_int_eq(proto_json_bool(o, "missing", true, &b), 0);
	ck_assert(b);
	ck_assert_int_eq(proto_json_str(o, "s", &s), 0);
	ck_assert_str_eq(s, "x");
	ck_assert_int_eq(proto_json_str(o, "missing", &s), 0);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(proto_json_str(o, "i", &s), -EINVAL);
	json_decref(o);
}
END_TEST

START_TEST(json_send_sizes)
{
	int sv[2];
	sockpair(sv);
	/* Small (stack buffer), large (heap) and too large for a frame. */
	size_t sizes[] = { 10, 5000, PROTO_MAX_PAYLOAD };
	for (size_t i = 0; i < 3; i++) {
		char *s = malloc(sizes[i] + 1);
		memset(s, 'q', sizes[i]);
		s[sizes[i]] = 0;
		json_t *o = json_pack("{s:s}", "k", s);
		int r = proto_send_json(sv[0], PROTO_OK, (uint32_t)i, o);
		if (i < 2) {
			ck_assert_int_eq(r, 0);
			struct proto_hdr h;
			uint8_t *p;
			ck_assert_int_eq(proto_recv(sv[1], &h, &p), 0);
			ck_assert_uint_eq(h.id, i);
			json_t *back;
			ck_assert_int_eq(parse((char *)p, &back), 0);
			ck_assert_str_eq(json_string_value(json_object_get(back, "k")), s);
			json_decref(back);
			free(p);
		} else {
			ck_assert_int_eq(r, -EMSGSIZE);
		}
		json_decref(o);
		free(s);
	}
	ck_assert_int_eq(proto_send_error(sv[0], 9, -ENOENT, "gone"), 0);
	struct proto_hdr h;
	uint8_t *p;
	ck_assert_int_eq(proto_recv(sv[1], &h, &p), 0);
	ck_assert_uint_eq(h.type, PROTO_ERROR);
	ck_assert_str_eq((char *)p, "{\"errno\":2,\"message\":\"gone\"}");
	free(p);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *tc = tcase_create("codec");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, hdr_layout);
	tcase_add_test(tc, type_tables);
	tcase_add_test(tc, restored_frame);
	tcase_add_test(tc, send_recv_small);
	tcase_add_test(tc, deadlines);
	tcase_add_test(tc, send_recv_max_nonblocking);
	tcase_add_test(tc, send_over_limit);
	tcase_add_test(tc, pipe_transport);
	tcase_add_test(tc, truncated_streams);
	tcase_add_test(tc, bad_header_on_stream);
	tcase_add_test(tc, peer_gone_is_epipe);
	tcase_add_test(tc, reader_feed_bytewise);
	tcase_add_test(tc, reader_feed_bad);
	suite_add_tcase(s, tc);
	tc = tcase_create("json");
	tcase_add_test(tc, json_parse_rules);
	tcase_add_test(tc, json_getters);
	tcase_add_test(tc, json_send_sizes);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
