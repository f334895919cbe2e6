/* Unit tests: templates from images and Dockerfiles, the host-only parts
 * (lib/template/template_rootfs.c, template_dockerfile.c, template_build.c's
 * state, template_ready.c's port check).  The images are OCI layouts
 * written here (oci_images.c); nothing boots. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/image/ext4w.h"
#include "lib/template/template.h"
#include "lib/template/template_build.h"
#include "lib/template/template_prune.h"
#include "lib/template/template_ready.h"
#include "lib/template/template_rootfs.h"
#include "oci_images.h"
#include "qcow2_create.h"
#include "unit.h"

static char tmp[64], store[128], layout[128], agent[128];
static struct img im;

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/cove-ut-timg-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	snprintf(store, sizeof(store), "%s/store", tmp);
	snprintf(layout, sizeof(layout), "%s/layout", tmp);
	snprintf(agent, sizeof(agent), "%s/cove-agent", tmp);
	ck_assert_int_eq(mkdir(store, 0700), 0);
	img_write_file(agent,
	               "\x7f"
	               "ELF agent",
	               10);
	char d[512];
	img_make(layout, "GREETING=hi", "amd64", &im);
	img_desc(d, sizeof(d), MT_MANIFEST, im.manifest, im.manifest_size, "latest", NULL);
	img_write_index(layout, d);
	setenv("COVE_AGENT", agent, 1);
	setenv("COVE_TEMPLATE_DIR", store, 1);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

static void spec_init(struct cove_template_spec *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "t");
	s->vmm = strdup("/bin/true");
	s->kernel = strdup("/bin/true");
	s->image = strdup("/bin/true");
	s->cpus = 1;
	s->memory_mib = 256;
}

/* The image's layers and the agent land in a new ext4; its config comes
 * back; a second call finds the file by its key and writes nothing. */
START_TEST(rootfs_from_layout)
{
	struct cove_template_spec s;
	spec_init(&s);
	char ref[160], err[512], path[4096], again[4096];
	snprintf(ref, sizeof(ref), "oci:%s:latest", layout);
	ck_assert_int_eq(cove_template_set(&s, &s.from, ref, err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_set_agent(&s, err, sizeof(err)), 0);
	struct cove_template_config c;
	int r = template_rootfs(store, &s, NULL, path, sizeof(path), &c, err, sizeof(err));
	ck_assert_msg(r == 0, "%s", err);
	ck_assert_str_eq(c.image_digest, im.manifest);
	ck_assert_str_eq(c.workdir, "/srv");
	ck_assert_str_eq(c.user, "1000");
	ck_assert_uint_eq(c.nenv, 1);
	ck_assert_str_eq(c.env[0], "GREETING=hi");
	ck_assert_ptr_nonnull(c.cmd);
	cove_template_config_free(&c);
	struct stat st1, st2;
	ck_assert_int_eq(stat(path, &st1), 0);
	ck_assert_int_eq(st1.st_mode & 0777, 0444);
	struct ext4w *w;
	ck_assert_int_eq(ext4w_open(path, &w, err, sizeof(err)), 0);
	struct ext4w_stat es;
	ck_assert_int_eq(ext4w_lookup(w, "hello", &es, err, sizeof(err)), 0);
	ck_assert_int_eq(ext4w_lookup(w, ROOTFS_AGENT_REL, &es, err, sizeof(err)), 0);
	ck_assert_uint_eq(es.mode, S_IFREG | 0755);
	ck_assert_uint_eq(es.size, 10);
	ck_assert_int_eq(ext4w_close(w, err, sizeof(err)), 0);
	r = template_rootfs(store, &s, NULL, again, sizeof(again), &c, err, sizeof(err));
	ck_assert_msg(r == 0, "%s", err);
	ck_assert_str_eq(again, path);
	ck_assert_int_eq(stat(path, &st2), 0);
	ck_assert_int_eq(st1.st_mtim.tv_nsec, st2.st_mtim.tv_nsec);
	cove_template_config_free(&c);
	/* A disk smaller than the content: one line, no file. */
	s.disk_size = 1 << 20;
	r = template_rootfs(store, &s, NULL, again, sizeof(again), &c, err, sizeof(err));
	ck_assert_int_eq(r, -EFBIG);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_msg(strstr(err, "--disk-size"), "%s", err);
	cove_template_spec_free(&s);
}
END_TEST

START_TEST(fold_config_state)
{
	struct cove_template_spec s;
	spec_init(&s);
	char err[256];
	ck_assert_int_eq(cove_template_add_step(&s, COVE_STEP_ENV, "A=1", err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_add_step(&s, COVE_STEP_ARG, "B=2", err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_add_step(&s, COVE_STEP_ENV, "A=3", err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_add_step(&s, COVE_STEP_WORKDIR, "/w", err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_add_step(&s, COVE_STEP_USER, "app", err, sizeof(err)), 0);
	ck_assert_int_eq(
	    cove_template_add_step(&s, COVE_STEP_CMD, "[\"python3\",\"app.py\"]", err, sizeof(err)),
	    0);
	ck_assert_int_lt(cove_template_add_step(&s, COVE_STEP_CMD, "[1]", err, sizeof(err)), 0);
	struct cove_template_config c = { 0 };
	c.env = calloc(3, sizeof(char *));
	c.env[0] = strdup("PATH=/bin");
	c.env[1] = strdup("A=0");
	c.nenv = 2;
	ck_assert_int_eq(template_fold_config(&c, s.steps, s.nsteps), 0);
	ck_assert_uint_eq(c.nenv, 2); /* A replaced, ARG B not kept */
	ck_assert_str_eq(c.env[1], "A=3");
	ck_assert_str_eq(c.workdir, "/w");
	ck_assert_str_eq(c.user, "app");
	ck_assert_str_eq(c.cmd[1], "app.py");
	ck_assert_ptr_null(c.cmd[2]);
	cove_template_config_free(&c);
	cove_template_spec_free(&s);
}
END_TEST

START_TEST(port_listening)
{
	static const char tcp[] =
	    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
	    "   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0\n"
	    "   1: 0100007F:0016 0100007F:9C40 01 00000000:00000000 00:00000000 00000000 0\n";
	ck_assert(template_port_listening(tcp, strlen(tcp), 8000));
	ck_assert(!template_port_listening(tcp, strlen(tcp), 22)); /* established */
	ck_assert(!template_port_listening(tcp, strlen(tcp), 80));
	static const char tcp6[] = "   0: 00000000000000000000000000000000:0BB8 "
	                           "00000000000000000000000000000000:0000 0A 0\n";
	ck_assert(template_port_listening(tcp6, strlen(tcp6), 3000));
	static const char junk[] = ":\n: :\n1: zz:GGGG 0:0 0A\n1: :1F40";
	ck_assert(!template_port_listening(junk, strlen(junk), 8000));
	ck_assert(!template_port_listening(tcp, 40, 8000)); /* cut short */
}
END_TEST

static char *write_in(const char *dir, const char *name, const char *text)
{
	static char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	img_write_file(p, text, strlen(text));
	return p;
}

/* Each instruction becomes its step, in order; FROM an image sets from
 * and the agent; CMD and ENTRYPOINT come last. */
START_TEST(dockerfile_steps)
{
	char ctx[128], df[256], text[1024], err[512];
	snprintf(ctx, sizeof(ctx), "%s/ctx", tmp);
	ck_assert_int_eq(mkdir(ctx, 0755), 0);
	write_in(ctx, "app.py", "print('hi')\n");
	snprintf(text, sizeof(text),
	         "FROM oci:%s:latest\n"
	         "ARG V=1\n"
	         "ENV A=$V B=two\n"
	         "WORKDIR /srv/app\n"
	         "COPY --chown=1000:1000 app.py ./\n"
	         "RUN [\"python3\", \"-c\", \"print('it''s')\"]\n"
	         "USER app\n"
	         "ENTRYPOINT [\"python3\"]\n",
	         layout);
	snprintf(df, sizeof(df), "%s", write_in(tmp, "Dockerfile", text));
	struct cove_template_spec s;
	spec_init(&s);
	const char *args[] = { "V=7" };
	int r = cove_template_from_dockerfile(&s, df, ctx, args, 1, err, sizeof(err));
	ck_assert_msg(r == 0, "%s", err);
	ck_assert_ptr_nonnull(strstr(s.from, layout));
	ck_assert_str_eq(s.agent, agent);
	static const enum cove_template_step_kind want[] = {
		COVE_STEP_ARG,     COVE_STEP_ENV,        COVE_STEP_ENV,
		COVE_STEP_WORKDIR, COVE_STEP_COPY,       COVE_STEP_RUN,
		COVE_STEP_USER,    COVE_STEP_ENTRYPOINT, COVE_STEP_CMD,
	};
	ck_assert_uint_eq(s.nsteps, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < s.nsteps; i++)
		ck_assert_int_eq(s.steps[i].kind, want[i]);
	ck_assert_str_eq(s.steps[0].run, "V=7");
	ck_assert_str_eq(s.steps[1].run, "A=7");
	ck_assert_str_eq(s.steps[4].guest, "/srv/app/");
	ck_assert_str_eq(s.steps[4].chown, "1000:1000");
	ck_assert_str_eq(s.steps[5].run, "exec 'python3' '-c' 'print('\\''it'\\'''\\''s'\\'')'");
	ck_assert_str_eq(s.steps[8].run, "[]"); /* an ENTRYPOINT clears the base's CMD */
	/* Every kind hashes; the COPY's input is its own. */
	const char *in[] = { "copy-input" };
	char keys[9][SHA256_HEX], h[SHA256_HEX];
	template_hash_inputs(&s, "v", "k", "b", in, keys, h);
	ck_assert_str_ne(keys[7], keys[8]);
	cove_template_spec_free(&s);

	/* Refusals name the line. */
	static const char *const bad[] = {
		"FROM oci:/x\nHEALTHCHECK CMD true\n",
		"FROM oci:/x\nCOPY missing.txt /\n",
	};
	static const char *const why[] = { "Dockerfile:2:", "Dockerfile:2:" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(df, sizeof(df), "%s", write_in(tmp, "Dockerfile", bad[i]));
		spec_init(&s);
		err[0] = 0;
		ck_assert_int_lt(
		    cove_template_from_dockerfile(&s, df, ctx, NULL, 0, err, sizeof(err)), 0);
		ck_assert_msg(strstr(err, why[i]) && !strchr(err, '\n'), "%s", err);
		cove_template_spec_free(&s);
	}
}
END_TEST

/* ADD: a local tar archive becomes a step that unpacks it into dest; the
 * plain sources around it stay COPY steps of their own, in order. */
START_TEST(dockerfile_add_archive)
{
	char ctx[128], df[256], text[1024], err[512], cmd[512];
	snprintf(ctx, sizeof(ctx), "%s/ctx", tmp);
	ck_assert_int_eq(mkdir(ctx, 0755), 0);
	write_in(ctx, "a.txt", "a\n");
	write_in(ctx, "b.txt", "b\n");
	snprintf(cmd, sizeof(cmd), "cd %s && tar -czf site.tar.gz a.txt", ctx);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(text, sizeof(text), "FROM oci:%s:latest\nADD a.txt site.tar.gz b.txt /srv/\n",
	         layout);
	snprintf(df, sizeof(df), "%s", write_in(tmp, "Dockerfile", text));
	struct cove_template_spec s;
	spec_init(&s);
	int r = cove_template_from_dockerfile(&s, df, ctx, NULL, 0, err, sizeof(err));
	ck_assert_msg(r == 0, "%s", err);
	ck_assert_uint_eq(s.nsteps, 3);
	ck_assert_uint_eq(s.steps[0].nsrcs, 1);
	ck_assert_str_eq(s.steps[0].srcs[0], "a.txt");
	ck_assert_uint_eq(s.steps[1].nsrcs, 0); /* the archive, unpacked */
	ck_assert_ptr_nonnull(strstr(s.steps[1].local, "/site.tar.gz"));
	ck_assert_str_eq(s.steps[1].guest, "/srv/");
	ck_assert_str_eq(s.steps[2].srcs[0], "b.txt");
	/* Keys: the same for the same inputs; an edit to the last step leaves
	 * the others' (so a rebuild finds them cached). */
	char k1[4][SHA256_HEX], k2[4][SHA256_HEX], h1[SHA256_HEX], h2[SHA256_HEX];
	ck_assert_int_eq(cove_template_hash_keys(&s, k1, h1, err, sizeof(err)), 0);
	cove_template_spec_free(&s);
	snprintf(text, sizeof(text),
	         "FROM oci:%s:latest\nADD a.txt site.tar.gz b.txt /srv/\nRUN x\n", layout);
	snprintf(df, sizeof(df), "%s", write_in(tmp, "Dockerfile", text));
	spec_init(&s);
	ck_assert_int_eq(cove_template_from_dockerfile(&s, df, ctx, NULL, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(cove_template_hash_keys(&s, k2, h2, err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_str_eq(k1[i], k2[i]);
	ck_assert_str_ne(h1, h2);
	cove_template_spec_free(&s);

	/* COPY of the same archive copies the file as it is: one step. */
	snprintf(text, sizeof(text), "FROM oci:%s:latest\nCOPY a.txt site.tar.gz /srv/\n", layout);
	snprintf(df, sizeof(df), "%s", write_in(tmp, "Dockerfile", text));
	spec_init(&s);
	r = cove_template_from_dockerfile(&s, df, ctx, NULL, 0, err, sizeof(err));
	ck_assert_msg(r == 0, "%s", err);
	ck_assert_uint_eq(s.nsteps, 1);
	ck_assert_uint_eq(s.steps[0].nsrcs, 2);
	cove_template_spec_free(&s);
}
END_TEST

/* prune: what no template's disk chain reaches goes, the rest stays. */
START_TEST(prune_unused_caches)
{
	char p[8][256], err[512];
	const char *fmt[] = { "%s/.images",   "%s/.images/rootfs",   "%s/.steps", "%s/.steps/k1",
		              "%s/.steps/k2", "%s/.steps/.tmp-1.ab", "%s/t1" };
	for (size_t i = 0; i < 7; i++) {
		snprintf(p[i], sizeof(p[i]), fmt[i], store);
		ck_assert_int_eq(mkdir(p[i], 0700), 0);
	}
	char r1[300], r2[300], k1[300], k2[300], t1[300];
	snprintf(r1, sizeof(r1), "%s/.images/rootfs/r1.ext4", store);
	snprintf(r2, sizeof(r2), "%s/.images/rootfs/r2.ext4", store);
	img_write_file(r1, "raw one", 7);
	img_write_file(r2, "raw two", 7);
	ck_assert_int_eq(truncate(r1, 1 << 20), 0);
	ck_assert_int_eq(truncate(r2, 1 << 20), 0);
	snprintf(k1, sizeof(k1), "%s/.steps/k1/disk0.qcow2", store);
	snprintf(k2, sizeof(k2), "%s/.steps/k2/disk0.qcow2", store);
	snprintf(t1, sizeof(t1), "%s/t1/disk0.qcow2", store);
	ck_assert_int_eq(qcow2_create_overlay_format(k1, r1, "raw", 0, err, sizeof(err)), 0);
	ck_assert_int_eq(qcow2_create_overlay_format(k2, r2, "raw", 0, err, sizeof(err)), 0);
	ck_assert_int_eq(qcow2_create_overlay_format(t1, k1, "qcow2", 0, err, sizeof(err)), 0);

	struct cove_template_pruned pr;
	ck_assert_int_eq(cove_template_prune(true, &pr, err, sizeof(err)), 0);
	ck_assert_uint_eq(pr.steps, 2); /* k2 and the unfinished .tmp */
	ck_assert_uint_eq(pr.rootfs, 1);
	ck_assert_int_eq(access(k2, F_OK), 0); /* a dry run removes nothing */
	ck_assert_int_eq(cove_template_prune(false, &pr, err, sizeof(err)), 0);
	ck_assert_uint_eq(pr.steps + pr.rootfs, 3);
	ck_assert_int_ne(access(k2, F_OK), 0);
	ck_assert_int_ne(access(r2, F_OK), 0);
	ck_assert_int_ne(access(p[5], F_OK), 0);
	ck_assert_int_eq(access(k1, F_OK), 0);
	ck_assert_int_eq(access(r1, F_OK), 0);
	ck_assert_int_eq(access(t1, F_OK), 0);

	/* A running build (the lock held shared) makes prune fail in one line. */
	int fd = template_prune_lock(store, false, err, sizeof(err));
	ck_assert_int_ge(fd, 0);
	err[0] = 0;
	ck_assert_int_lt(cove_template_prune(false, &pr, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "build is running") && !strchr(err, '\n'), "%s", err);
	close(fd);
}
END_TEST

/* The Dockerfile of tests/integration/test_dockerfile.sh: an edit to its
 * last RUN keys only that step anew. */
START_TEST(dockerfile_keys_stable)
{
	char ctx[128], df[256], text[2048], err[512], cmd[512];
	snprintf(ctx, sizeof(ctx), "%s/ctx", tmp);
	ck_assert_int_eq(mkdir(ctx, 0755), 0);
	snprintf(cmd, sizeof(cmd),
	         "cd %s && mkdir app css && echo s >app/server.py && echo x >app/secret.txt && "
	         "echo app/secret.txt >.dockerignore && echo c >css/site.css && "
	         "tar -czf assets.tar.gz css",
	         ctx);
	ck_assert_int_eq(system(cmd), 0);
	char keys[2][8][SHA256_HEX], h[SHA256_HEX];
	const char *args[] = { "APP_MSG=from-build-arg" };
	for (int v = 0; v < 2; v++) {
		snprintf(text, sizeof(text),
		         "FROM oci:%s:latest\nARG APP_MSG=default\nENV APP_NAME=cove-app\n"
		         "WORKDIR /srv/app\nCOPY app/ /srv/app/\nADD assets.tar.gz /srv/assets/\n"
		         "RUN echo \"$APP_MSG\" >/srv/app/msg\nRUN echo last-v%d\n"
		         "CMD [\"python3\", \"/srv/app/server.py\"]\n",
		         layout, v);
		snprintf(df, sizeof(df), "%s", write_in(ctx, "Dockerfile", text));
		struct cove_template_spec s;
		spec_init(&s);
		ck_assert_int_eq(
		    cove_template_from_dockerfile(&s, df, ctx, args, 1, err, sizeof(err)), 0);
		ck_assert_uint_eq(s.nsteps, 8);
		ck_assert_int_eq(cove_template_hash_keys(&s, keys[v], h, err, sizeof(err)), 0);
		cove_template_spec_free(&s);
	}
	for (int i = 0; i < 6; i++)
		ck_assert_msg(!strcmp(keys[0][i], keys[1][i]), "step %d's key changed", i + 1);
	ck_assert_str_ne(keys[0][6], keys[1][6]);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("template_image");
	TCase *t = tcase_create("core");
	tcase_set_timeout(t, 60);
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, rootfs_from_layout);
	tcase_add_test(t, fold_config_state);
	tcase_add_test(t, port_listening);
	tcase_add_test(t, dockerfile_steps);
	tcase_add_test(t, dockerfile_add_archive);
	tcase_add_test(t, prune_unused_caches);
	tcase_add_test(t, dockerfile_keys_stable);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
