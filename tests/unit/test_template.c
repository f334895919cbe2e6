/* Unit tests: templates' pure part and store (lib/template*.c, common/
 * sha256.c): SHA-256 vectors, the manifest round trip and malformed ones,
 * the inputs hash (each input changes it, paths do not), the sparse-aware
 * file hash, the stat-keyed cache, names, the store's checks, ls and rm,
 * and ensure's locks (a wait for a build does not wait for restores). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/sha256.h"
#include "lib/template/template.h"
#include "unit.h"

static char tmp[64];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/cove-ut-tmpl-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	char store[128];
	snprintf(store, sizeof(store), "%s/store", tmp);
	setenv("COVE_TEMPLATE_DIR", store, 1);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	ck_assert_int_eq(system(cmd), 0);
	unsetenv("COVE_TEMPLATE_DIR");
}

static void hex_of(const char *s, size_t len, char out[SHA256_HEX])
{
	struct sha256 h;
	uint8_t d[SHA256_LEN];
	sha256_init(&h);
	sha256_update(&h, s, len);
	sha256_final(&h, d);
	sha256_hex(d, out);
}

START_TEST(sha256_vectors)
{
	char hex[SHA256_HEX];
	hex_of("", 0, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hex_of("abc", 3, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	hex_of(two, strlen(two), hex);
	ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* A million 'a's fed in odd pieces: the buffering across updates. */
	struct sha256 h;
	uint8_t d[SHA256_LEN];
	static char a[1000];
	memset(a, 'a', sizeof(a));
	sha256_init(&h);
	for (int i = 0; i < 1000; i++) {
		sha256_update(&h, a, 333);
		sha256_update(&h, a, 667);
	}
	sha256_final(&h, d);
	sha256_hex(d, hex);
	ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

static void spec_fill(struct cove_template_spec *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "web");
	s->vmm = strdup("/usr/bin/cove-vmm");
	s->kernel = strdup("/k/vmlinux");
	s->image = strdup("/i/minimal.ext4");
	s->cpus = 2;
	s->memory_mib = 512;
	s->disk_size = 1 << 30;
	s->net = COVE_TEMPLATE_NET_NONE;
	char err[256];
	ck_assert_int_eq(cove_template_add_run(s, "echo \"hi\" > /root/x", err, sizeof(err)), 0);
	char local[128];
	snprintf(local, sizeof(local), "%s/put.txt", tmp);
	FILE *f = fopen(local, "w");
	ck_assert_ptr_nonnull(f);
	fputs("payload", f);
	fclose(f);
	ck_assert_int_eq(cove_template_add_put(s, local, "/etc/put.txt", err, sizeof(err)), 0);
}

START_TEST(manifest_round_trip)
{
	struct cove_template_manifest m = { .created = 1733100000 }, back;
	spec_fill(&m.spec);
	memset(m.inputs_hash, 'a', SHA256_HEX - 1);
	m.inputs_hash[SHA256_HEX - 1] = 0;
	char *text = template_manifest_dump(&m);
	ck_assert_ptr_nonnull(text);
	char err[256];
	ck_assert_int_eq(template_manifest_parse(text, strlen(text), &back, err, sizeof(err)), 0);
	ck_assert_str_eq(back.spec.name, "web");
	ck_assert_str_eq(back.spec.kernel, "/k/vmlinux");
	ck_assert_str_eq(back.spec.image, "/i/minimal.ext4");
	ck_assert_uint_eq(back.spec.cpus, 2);
	ck_assert_uint_eq(back.spec.memory_mib, 512);
	ck_assert_uint_eq(back.spec.disk_size, 1 << 30);
	ck_assert_int_eq(back.spec.net, COVE_TEMPLATE_NET_NONE);
	ck_assert_uint_eq(back.spec.nsteps, 2);
	ck_assert_int_eq(back.spec.steps[0].kind, COVE_STEP_RUN);
	ck_assert_str_eq(back.spec.steps[0].run, "echo \"hi\" > /root/x");
	ck_assert_int_eq(back.spec.steps[1].kind, COVE_STEP_PUT);
	ck_assert_str_eq(back.spec.steps[1].guest, "/etc/put.txt");
	ck_assert_str_eq(back.inputs_hash, m.inputs_hash);
	ck_assert_int_eq(back.created, 1733100000);
	free(text);
	cove_template_manifest_free(&back);
	cove_template_manifest_free(&m);
}
END_TEST

/* The image, Dockerfile and start fields, and each kind of step, come
 * back as they went; a change to one step keys it and the steps after it
 * anew, never the ones before. */
START_TEST(manifest_image_steps)
{
	struct cove_template_manifest m = { .created = 1 }, back;
	spec_fill(&m.spec);
	char err[256];
	struct cove_template_spec *s = &m.spec;
	const char *srcs[] = { "app", "*.py" };
	ck_assert_int_eq(cove_template_add_step(s, COVE_STEP_ENV, "A=1 2", err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_add_step(s, COVE_STEP_WORKDIR, "/srv", err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_add_step(s, COVE_STEP_USER, "app:app", err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_add_step(s, COVE_STEP_ARG, "V=3", err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_add_copy(s, tmp, srcs, 2, "/srv/", "1000", err, sizeof(err)),
	                 0);
	ck_assert_int_lt(cove_template_add_step(s, COVE_STEP_ENV, "=x", err, sizeof(err)), 0);
	ck_assert_int_lt(cove_template_add_step(s, COVE_STEP_WORKDIR, "rel", err, sizeof(err)), 0);
	ck_assert_int_lt(cove_template_add_step(s, COVE_STEP_USER, "a b", err, sizeof(err)), 0);
	ck_assert_int_lt(cove_template_add_copy(s, tmp, srcs, 2, "rel", NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_set(s, &s->from, "oci-archive:/x.tar", err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_set(s, &s->agent, "/a/cove-agent", err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_set(s, &s->start_cmd, "serve", err, sizeof(err)), 0);
	s->ready_port = 8000;
	s->ready_timeout_s = 30;
	m.config.env = calloc(2, sizeof(char *));
	m.config.env[0] = strdup("PATH=/bin");
	m.config.nenv = 1;
	m.config.workdir = strdup("/srv");
	m.config.cmd = calloc(3, sizeof(char *));
	m.config.cmd[0] = strdup("python3");
	m.config.cmd[1] = strdup("app.py");
	snprintf(m.config.image_digest, sizeof(m.config.image_digest), "sha256:%064d", 0);
	memset(m.inputs_hash, 'b', SHA256_HEX - 1);
	m.inputs_hash[SHA256_HEX - 1] = 0;
	char *text = template_manifest_dump(&m);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(template_manifest_parse(text, strlen(text), &back, err, sizeof(err)), 0);
	ck_assert_uint_eq(back.spec.nsteps, 7);
	ck_assert_int_eq(back.spec.steps[2].kind, COVE_STEP_ENV);
	ck_assert_str_eq(back.spec.steps[2].run, "A=1 2");
	ck_assert_int_eq(back.spec.steps[4].kind, COVE_STEP_USER);
	ck_assert_int_eq(back.spec.steps[5].kind, COVE_STEP_ARG);
	const struct cove_template_step *c = &back.spec.steps[6];
	ck_assert_int_eq(c->kind, COVE_STEP_COPY);
	ck_assert_uint_eq(c->nsrcs, 2);
	ck_assert_str_eq(c->srcs[1], "*.py");
	ck_assert_str_eq(c->guest, "/srv/");
	ck_assert_str_eq(c->chown, "1000");
	ck_assert_str_eq(back.spec.from, "oci-archive:/x.tar");
	ck_assert_str_eq(back.spec.start_cmd, "serve");
	ck_assert_uint_eq(back.spec.ready_port, 8000);
	ck_assert_uint_eq(back.spec.ready_timeout_s, 30);
	ck_assert_uint_eq(back.config.nenv, 1);
	ck_assert_str_eq(back.config.env[0], "PATH=/bin");
	ck_assert_str_eq(back.config.cmd[1], "app.py");
	ck_assert_ptr_null(back.config.cmd[2]);
	ck_assert_str_eq(back.config.image_digest, m.config.image_digest);
	free(text);

	const char *in[] = { "p", "c" }, *in2[] = { "p", "C" };
	char k1[7][SHA256_HEX], k2[7][SHA256_HEX], h1[SHA256_HEX], h2[SHA256_HEX];
	template_hash_inputs(s, "v", "k", "i", in, k1, h1);
	template_hash_inputs(s, "v", "k", "i", in2, k2, h2);
	for (int i = 0; i < 6; i++)
		ck_assert_str_eq(k1[i], k2[i]);
	ck_assert_str_ne(k1[6], k2[6]);
	ck_assert_str_ne(h1, h2);
	free(s->steps[3].run);
	s->steps[3].run = strdup("/other");
	template_hash_inputs(s, "v", "k", "i", in, k2, h2);
	for (int i = 0; i < 7; i++)
		ck_assert_int_eq(strcmp(k1[i], k2[i]) == 0, i < 3);
	cove_template_manifest_free(&back);
	cove_template_manifest_free(&m);
}
END_TEST

START_TEST(manifest_malformed)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{}",
		"{\"version\":2}",
		/* each of these differs from a good one in one field */
		"{\"version\":1,\"name\":\".x\",\"inputs_hash\":\"%H\",\"created\":1,\"vmm\":\"/"
		"v\","
		"\"kernel\":\"/k\",\"image\":\"/i\",\"cpus\":1,\"memory_mib\":256,\"disk_size\":0,"
		"\"net\":\"off\",\"steps\":[]}",
		"{\"version\":1,\"name\":\"x\",\"inputs_hash\":\"ABC\",\"created\":1,\"vmm\":\"/"
		"v\","
		"\"kernel\":\"/k\",\"image\":\"/i\",\"cpus\":1,\"memory_mib\":256,\"disk_size\":0,"
		"\"net\":\"off\",\"steps\":[]}",
		"{\"version\":1,\"name\":\"x\",\"inputs_hash\":\"%H\",\"created\":1,\"vmm\":\"v\","
		"\"kernel\":\"/k\",\"image\":\"/i\",\"cpus\":1,\"memory_mib\":256,\"disk_size\":0,"
		"\"net\":\"off\",\"steps\":[]}",
		"{\"version\":1,\"name\":\"x\",\"inputs_hash\":\"%H\",\"created\":1,\"vmm\":\"/v\","
		"\"kernel\":\"/k\",\"image\":\"/i\",\"cpus\":0,\"memory_mib\":256,\"disk_size\":0,"
		"\"net\":\"off\",\"steps\":[]}",
		"{\"version\":1,\"name\":\"x\",\"inputs_hash\":\"%H\",\"created\":1,\"vmm\":\"/v\","
		"\"kernel\":\"/k\",\"image\":\"/i\",\"cpus\":1,\"memory_mib\":16,\"disk_size\":0,"
		"\"net\":\"off\",\"steps\":[]}",
		"{\"version\":1,\"name\":\"x\",\"inputs_hash\":\"%H\",\"created\":1,\"vmm\":\"/v\","
		"\"kernel\":\"/k\",\"image\":\"/i\",\"cpus\":1,\"memory_mib\":256,\"disk_size\":0,"
		"\"net\":true,\"steps\":[]}",
		"{\"version\":1,\"name\":\"x\",\"inputs_hash\":\"%H\",\"created\":1,\"vmm\":\"/v\","
		"\"kernel\":\"/k\",\"image\":\"/i\",\"cpus\":1,\"memory_mib\":256,\"disk_size\":0,"
		"\"net\":\"off\",\"steps\":[{\"run\":\"\"}]}",
		"{\"version\":1,\"name\":\"x\",\"inputs_hash\":\"%H\",\"created\":1,\"vmm\":\"/v\","
		"\"kernel\":\"/k\",\"image\":\"/i\",\"cpus\":1,\"memory_mib\":256,\"disk_size\":0,"
		"\"net\":\"off\",\"steps\":[{\"put\":\"rel\",\"to\":\"/g\"}]}",
		"{\"version\":1,\"name\":\"x\",\"inputs_hash\":\"%H\",\"created\":1,\"vmm\":\"/v\","
		"\"kernel\":\"/k\",\"image\":\"/i\",\"cpus\":1,\"memory_mib\":256,\"disk_size\":0,"
		"\"net\":\"off\",\"steps\":[{\"run\":\"a\",\"x\":1}]}",
		"{\"version\":1,\"name\":\"x\",\"inputs_hash\":\"%H\",\"created\":1,\"vmm\":\"/v\","
		"\"kernel\":\"/k\",\"image\":\"/i\",\"cpus\":1,\"memory_mib\":256,\"disk_size\":0,"
		"\"net\":\"off\",\"steps\":[],\"extra\":1}",
		"{\"version\":1,\"name\":\"x\",\"name\":\"y\"}",
		"{\"version\":1,\"name\":\"x\",\"inputs_hash\":\"%H\",\"created\":1,\"vmm\":\"/v\","
		"\"kernel\":\"/k\\u0000x\",\"image\":\"/i\",\"cpus\":1,\"memory_mib\":256,"
		"\"disk_size\":0,\"net\":\"off\",\"steps\":[]}",
	};
	char hash[SHA256_HEX];
	memset(hash, '0', SHA256_HEX - 1);
	hash[SHA256_HEX - 1] = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[2048], *h;
		snprintf(text, sizeof(text), "%s", bad[i]);
		if ((h = strstr(text, "%H"))) {
			char rest[2048];
			snprintf(rest, sizeof(rest), "%s", h + 2);
			snprintf(h, sizeof(text) - (size_t)(h - text), "%s%s", hash, rest);
		}
		struct cove_template_manifest m;
		char err[256] = "";
		int r = template_manifest_parse(text, strlen(text), &m, err, sizeof(err));
		ck_assert_msg(r == -EINVAL, "case %zu accepted: %s", i, text);
		ck_assert_msg(err[0], "case %zu: no message", i);
	}
	/* The good one the cases differ from is accepted. */
	char good[1024];
	snprintf(
	    good, sizeof(good),
	    "{\"version\":1,\"name\":\"x\",\"inputs_hash\":\"%s\",\"created\":1,\"vmm\":\"/v\","
	    "\"kernel\":\"/k\",\"image\":\"/i\",\"cpus\":1,\"memory_mib\":256,\"disk_size\":0,"
	    "\"net\":\"off\",\"steps\":[{\"run\":\"a\"},{\"put\":\"/l\",\"to\":\"/g\"}]}",
	    hash);
	struct cove_template_manifest m;
	char err[256];
	ck_assert_int_eq(template_manifest_parse(good, strlen(good), &m, err, sizeof(err)), 0);
	cove_template_manifest_free(&m);
}
END_TEST

START_TEST(inputs_hash_covers_each_input)
{
	struct cove_template_spec s;
	spec_fill(&s);
	const char *puts[] = { "p1" };
	char base[SHA256_HEX], h[SHA256_HEX];
	template_hash_inputs(&s, "v", "k", "i", puts, NULL, base);
	template_hash_inputs(&s, "v", "k", "i", puts, NULL, h);
	ck_assert_str_eq(base, h);
	/* Paths are not inputs: contents are. */
	free(s.kernel);
	s.kernel = strdup("/elsewhere/vmlinux");
	template_hash_inputs(&s, "v", "k", "i", puts, NULL, h);
	ck_assert_str_eq(base, h);
	template_hash_inputs(&s, "V", "k", "i", puts, NULL, h);
	ck_assert_str_ne(base, h);
	template_hash_inputs(&s, "v", "K", "i", puts, NULL, h);
	ck_assert_str_ne(base, h);
	template_hash_inputs(&s, "v", "k", "I", puts, NULL, h);
	ck_assert_str_ne(base, h);
	const char *puts2[] = { "p2" };
	template_hash_inputs(&s, "v", "k", "i", puts2, NULL, h);
	ck_assert_str_ne(base, h);
	s.cpus = 3;
	template_hash_inputs(&s, "v", "k", "i", puts, NULL, h);
	ck_assert_str_ne(base, h);
	s.cpus = 2;
	s.memory_mib = 1024;
	template_hash_inputs(&s, "v", "k", "i", puts, NULL, h);
	ck_assert_str_ne(base, h);
	s.memory_mib = 512;
	s.disk_size = 0;
	template_hash_inputs(&s, "v", "k", "i", puts, NULL, h);
	ck_assert_str_ne(base, h);
	s.disk_size = 1 << 30;
	s.net = COVE_TEMPLATE_NET_OFF;
	template_hash_inputs(&s, "v", "k", "i", puts, NULL, h);
	ck_assert_str_ne(base, h);
	s.net = COVE_TEMPLATE_NET_NONE;
	free(s.steps[0].run);
	s.steps[0].run = strdup("echo \"hi\" > /root/y");
	template_hash_inputs(&s, "v", "k", "i", puts, NULL, h);
	ck_assert_str_ne(base, h);
	free(s.steps[0].run);
	s.steps[0].run = strdup("echo \"hi\" > /root/x");
	free(s.steps[1].guest);
	s.steps[1].guest = strdup("/etc/other");
	template_hash_inputs(&s, "v", "k", "i", puts, NULL, h);
	ck_assert_str_ne(base, h);
	cove_template_spec_free(&s);
}
END_TEST

static int write_file(const char *path, const void *data, size_t len, off_t at)
{
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, data, len, at), (ssize_t)len);
	return fd;
}

START_TEST(file_hash_sparse)
{
	char a[128], b[128], ha[SHA256_HEX], hb[SHA256_HEX];
	snprintf(a, sizeof(a), "%s/sparse", tmp);
	snprintf(b, sizeof(b), "%s/dense", tmp);
	static char zeros[1 << 20];
	/* The same content: one file with a 1 MiB hole, one with zeros. */
	int fa = write_file(a, "end", 3, 1 << 20);
	int fb = write_file(b, zeros, sizeof(zeros), 0);
	ck_assert_int_eq(pwrite(fb, "end", 3, 1 << 20), 3);
	ck_assert_int_eq(template_file_hash(fa, ha), 0);
	ck_assert_int_eq(template_file_hash(fb, hb), 0);
	ck_assert_str_eq(ha, hb);
	/* One byte changed in the middle. */
	ck_assert_int_eq(pwrite(fb, "x", 1, 4096 * 7 + 5), 1);
	ck_assert_int_eq(template_file_hash(fb, hb), 0);
	ck_assert_str_ne(ha, hb);
	/* A longer file of zeros is not the same file. */
	ck_assert_int_eq(ftruncate(fa, (1 << 20) + 4096), 0);
	char hc[SHA256_HEX];
	ck_assert_int_eq(template_file_hash(fa, hc), 0);
	ck_assert_str_ne(ha, hc);
	close(fa);
	close(fb);
}
END_TEST

START_TEST(names)
{
	ck_assert(cove_template_name_valid("web"));
	ck_assert(cove_template_name_valid("base-minimal-1x256-0123abcd"));
	ck_assert(!cove_template_name_valid(""));
	ck_assert(!cove_template_name_valid(".lock"));
	ck_assert(!cove_template_name_valid("a/b"));
	ck_assert(!cove_template_name_valid("a b"));
	char long_[80];
	memset(long_, 'a', sizeof(long_) - 1);
	long_[sizeof(long_) - 1] = 0;
	ck_assert(!cove_template_name_valid(long_));
	long_[COVE_TEMPLATE_NAME_MAX] = 0;
	ck_assert(cove_template_name_valid(long_));
}
END_TEST

/* Files of a fake build: a kernel, an image, a cove-vmm. */
static void fake_inputs(struct cove_config *cfg, char paths[3][128])
{
	memset(cfg, 0, sizeof(*cfg));
	const char *n[3] = { "vmm", "kernel", "image" };
	for (int i = 0; i < 3; i++) {
		snprintf(paths[i], 128, "%s/%s", tmp, n[i]);
		close(write_file(paths[i], n[i], strlen(n[i]), 0));
	}
	cfg->vmm = paths[0];
	cfg->kernel = paths[1];
	cfg->image = paths[2];
}

START_TEST(hash_cache_follows_changes)
{
	struct cove_config cfg;
	char paths[3][128];
	fake_inputs(&cfg, paths);
	struct cove_template_spec s;
	char err[512], h1[SHA256_HEX], h2[SHA256_HEX];
	ck_assert_int_eq(cove_template_base_spec(&s, &cfg, COVE_TEMPLATE_NET_OFF, err, sizeof(err)),
	                 0);
	ck_assert_msg(!strncmp(s.name, "base-image-1x256-", 17), "name %s", s.name);
	ck_assert_int_eq(cove_template_hash(&s, h1, err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_hash(&s, h2, err, sizeof(err)), 0); /* from the cache */
	ck_assert_str_eq(h1, h2);
	/* The same length, another content: stat changes (ctime), so it is
	 * read again. */
	close(write_file(paths[1], "KERNEL", 6, 0));
	ck_assert_int_eq(cove_template_hash(&s, h2, err, sizeof(err)), 0);
	ck_assert_str_ne(h1, h2);
	/* A missing input is named. */
	unlink(paths[2]);
	ck_assert_int_eq(cove_template_hash(&s, h2, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "image"));
	cove_template_spec_free(&s);
}
END_TEST

START_TEST(store_checks)
{
	char store[256], err[512], p[128];
	snprintf(p, sizeof(p), "%s/open", tmp);
	ck_assert_int_eq(mkdir(p, 0777), 0);
	ck_assert_int_eq(chmod(p, 0777), 0);
	setenv("COVE_TEMPLATE_DIR", p, 1);
	ck_assert_int_eq(cove_template_store(store, sizeof(store), err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "mode 0777"));
	/* The daemon's override wins over the environment. */
	snprintf(p, sizeof(p), "%s/daemon", tmp);
	cove_template_set_store(p);
	ck_assert_int_eq(cove_template_store(store, sizeof(store), err, sizeof(err)), 0);
	ck_assert_str_eq(store, p);
	cove_template_set_store(NULL);
}
END_TEST

START_TEST(list_and_remove)
{
	char store[256], err[512], dir[400];
	ck_assert_int_eq(cove_template_store(store, sizeof(store), err, sizeof(err)), 0);
	struct cove_template_manifest m = { .created = 100 };
	spec_fill(&m.spec);
	memset(m.inputs_hash, 'b', SHA256_HEX - 1);
	m.inputs_hash[SHA256_HEX - 1] = 0;
	snprintf(dir, sizeof(dir), "%s/web", store);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	char *text = template_manifest_dump(&m);
	char p[500];
	snprintf(p, sizeof(p), "%s/template.json", dir);
	close(write_file(p, text, strlen(text), 0));
	free(text);
	/* A build in progress and a directory without a manifest are not
	 * templates. */
	snprintf(p, sizeof(p), "%s/.build-web.1.0", store);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/junk", store);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	struct cove_template_info *v;
	size_t n;
	ck_assert_int_eq(cove_template_list(&v, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(v[0].name, "web");
	ck_assert_str_eq(v[0].inputs_hash, m.inputs_hash);
	ck_assert_int_eq(v[0].created, 100);
	free(v);
	struct cove_template_manifest back;
	ck_assert_int_eq(cove_template_load("web", &back, err, sizeof(err)), 0);
	ck_assert_uint_eq(back.spec.nsteps, 2);
	cove_template_manifest_free(&back);
	ck_assert_int_eq(cove_template_load("nope", &back, err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(cove_template_remove("web", err, sizeof(err)), 0);
	struct stat st;
	ck_assert_int_ne(stat(dir, &st), 0);
	ck_assert_int_eq(cove_template_remove("web", err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(cove_template_remove("../x", err, sizeof(err)), -EINVAL);
	cove_template_manifest_free(&m);
}
END_TEST

/* Many creates that find the template missing wait for its one build; once
 * built, each takes its shared lock at once, not after the restores that
 * hold theirs (which made 64 concurrent creates run one at a time). */
struct ensure_job {
	struct cove_template_spec *spec;
	char dir[400], err[512];
	int r, lockfd;
};

static void *ensure_thread(void *arg)
{
	struct ensure_job *j = arg;
	j->r = cove_template_ensure(j->spec, false, NULL, j->dir, sizeof(j->dir), &j->lockfd,
	                            j->err, sizeof(j->err));
	return NULL;
}

static int lock_file(const char *store, const char *name, int op)
{
	char p[400];
	snprintf(p, sizeof(p), "%s/.lock/%s", store, name);
	int fd = open(p, O_RDWR | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, op | LOCK_NB), 0);
	return fd;
}

START_TEST(ensure_waits_for_the_build_not_the_restores)
{
	char rt[128], store[256], err[512], p[500], hash[SHA256_HEX];
	snprintf(rt, sizeof(rt), "%s/rt", tmp);
	setenv("COVE_RUNTIME_DIR", rt, 1);
	ck_assert_int_eq(cove_template_store(store, sizeof(store), err, sizeof(err)), 0);
	struct cove_template_spec s;
	spec_fill(&s);
	const char *inputs[] = { "vmm", "kernel", "image" };
	char **fields[] = { &s.vmm, &s.kernel, &s.image };
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", tmp, inputs[i]);
		close(write_file(p, inputs[i], strlen(inputs[i]), 0));
		free(*fields[i]);
		*fields[i] = strdup(p);
	}
	ck_assert_int_eq(cove_template_hash(&s, hash, err, sizeof(err)), 0);
	/* An old build of "web" (another inputs hash), which a restore holds,
	 * and a builder at work on the new one. */
	struct cove_template_manifest m = { .created = 1 };
	m.spec = s;
	memset(m.inputs_hash, 'b', SHA256_HEX - 1);
	m.inputs_hash[SHA256_HEX - 1] = 0;
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/web", store);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	snprintf(p, sizeof(p), "%s/template.json", dir);
	char *text = template_manifest_dump(&m);
	close(write_file(p, text, strlen(text), 0));
	free(text);
	int restore = lock_file(store, "web", LOCK_SH);
	int builder = lock_file(store, ".build-web", LOCK_EX);
	struct ensure_job j = { .spec = &s, .lockfd = -1 };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, ensure_thread, &j), 0);
	usleep(300 * 1000);
	ck_assert_int_eq(pthread_tryjoin_np(t, NULL), EBUSY); /* it waits for the build */
	/* The build ends: its manifest, then its lock; the restore goes on. */
	memcpy(m.inputs_hash, hash, SHA256_HEX);
	text = template_manifest_dump(&m);
	ck_assert_int_eq(unlink(p), 0);
	close(write_file(p, text, strlen(text), 0));
	free(text);
	ck_assert_int_eq(flock(builder, LOCK_UN), 0);
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	ck_assert_int_eq(pthread_timedjoin_np(t, NULL, &dl), 0);
	ck_assert_msg(j.r == 0, "%s", j.err);
	ck_assert_str_eq(j.dir, dir);
	ck_assert_int_ge(j.lockfd, 0);
	/* It holds the use lock shared, as a restore does: no removal now. */
	snprintf(p, sizeof(p), "%s/.lock/web", store);
	int rm = open(p, O_RDWR);
	ck_assert_int_eq(flock(rm, LOCK_EX | LOCK_NB), -1);
	close(j.lockfd);
	close(restore);
	ck_assert_int_eq(flock(rm, LOCK_EX | LOCK_NB), 0);
	/* The fast path of a caller that remembers: held while the template
	 * is what it was built from, not while a build holds it, not once it
	 * was built from other inputs or removed. */
	char built[SHA256_HEX];
	ck_assert_int_eq(cove_template_built_hash(dir, built), 0);
	ck_assert_str_eq(built, hash);
	int held = -1;
	ck_assert_int_eq(cove_template_hold(dir, hash, &held), 1); /* rm holds it */
	ck_assert_int_eq(held, -1);
	ck_assert_int_eq(flock(rm, LOCK_UN), 0);
	ck_assert_int_eq(cove_template_hold(dir, hash, &held), 0);
	ck_assert_int_ge(held, 0);
	ck_assert_int_eq(flock(rm, LOCK_EX | LOCK_NB), -1); /* held shared, as a restore's */
	close(held);
	ck_assert_int_eq(cove_template_hold(dir, m.inputs_hash, &held), 0);
	close(held);
	memset(built, 'c', SHA256_HEX - 1);
	ck_assert_int_eq(cove_template_hold(dir, built, &held), 1);
	snprintf(p, sizeof(p), "%s/template.json", dir);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(cove_template_hold(dir, hash, &held), 1);
	ck_assert_int_eq(cove_template_built_hash(dir, built), -ENOENT);
	ck_assert_int_eq(cove_template_hold("web", hash, &held), -EINVAL);
	close(rm);
	close(builder);
	cove_template_spec_free(&s);
	unsetenv("COVE_RUNTIME_DIR");
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("template");
	TCase *tc = tcase_create("template");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, sha256_vectors);
	tcase_add_test(tc, manifest_round_trip);
	tcase_add_test(tc, manifest_malformed);
	tcase_add_test(tc, manifest_image_steps);
	tcase_add_test(tc, inputs_hash_covers_each_input);
	tcase_add_test(tc, file_hash_sparse);
	tcase_add_test(tc, names);
	tcase_add_test(tc, hash_cache_follows_changes);
	tcase_add_test(tc, store_checks);
	tcase_add_test(tc, list_and_remove);
	tcase_add_test(tc, ensure_waits_for_the_build_not_the_restores);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
