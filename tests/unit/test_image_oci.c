/* Unit tests: image sources (lib/image/oci*.c).  Every image is made here:
 * OCI layouts written blob by blob, oci-archives and docker-archives
 * written with libarchive (hostile member names among them), and a layout
 * made by umoci, and what skopeo writes from it locally (builders in
 * oci_images.c).  Covered: references, tag and platform selection, digest,
 * size and media type refusals, missing blobs named, blobs never read
 * twice, hostile members never written, and skopeo's command line, its
 * absence and its failure (a fake skopeo in PATH; no network). */
#include <archive.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "lib/image/oci.h"
#include "lib/image/oci_json.h"
#include "lib/image/oci_pull.h"
#include "oci_images.h"
#include "unit.h"

static char tmp[64], cache[128], layout[128];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/cove-ut-oci-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	snprintf(cache, sizeof(cache), "%s/cache", tmp);
	snprintf(layout, sizeof(layout), "%s/layout", tmp);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

/* One image tagged "latest" in the layout. */
static void make_tagged(const char *env, struct img *im)
{
	char d[512];
	img_make(layout, env, "amd64", im);
	img_desc(d, sizeof(d), MT_MANIFEST, im->manifest, im->manifest_size, "latest", NULL);
	img_write_index(layout, d);
}

static int open_ref(const char *fmt, const char *arg, struct image_src *s, char *err, size_t n)
{
	char ref[512];
	snprintf(ref, sizeof(ref), fmt, arg);
	err[0] = '\0';
	int r = image_src_open(cache, ref, 5000, s, err, n);
	if (r)
		ck_assert_msg(err[0] && !strchr(err, '\n'), "not one line: '%s'", err);
	if (r && getenv("COVE_TEST_VERBOSE")) /* the messages, for a reader */
		fprintf(stderr, "%s: %s\n", ref, err);
	return r;
}

static const char *env0(const struct image_src *s)
{
	return s->config.n_env ? s->config.env[0] : "";
}

/* No file in the cache's blob folder but blobs (no temporary left). */
static void cache_clean(void)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/blobs/sha256", cache);
	DIR *d = opendir(p);
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' || (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")))
			ck_assert_msg(strlen(de->d_name) == 64, "stray %s", de->d_name);
	closedir(d);
}

START_TEST(ref_parse)
{
	struct image_ref r;
	char err[256];
	ck_assert_int_eq(image_ref_parse("oci:/a/b", &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.kind, IMAGE_REF_OCI);
	ck_assert_str_eq(r.path, "/a/b");
	ck_assert_str_eq(r.tag, "");
	ck_assert_int_eq(image_ref_parse("oci:/a/b:v1.2", &r, err, sizeof(err)), 0);
	ck_assert_str_eq(r.path, "/a/b");
	ck_assert_str_eq(r.tag, "v1.2");
	ck_assert_int_eq(image_ref_parse("oci:/a:b/c", &r, err, sizeof(err)), 0);
	ck_assert_str_eq(r.path, "/a:b/c");
	ck_assert_str_eq(r.tag, "");
	ck_assert_int_eq(image_ref_parse("oci-archive:x.tar:latest", &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.kind, IMAGE_REF_OCI_ARCHIVE);
	ck_assert_str_eq(r.path, "x.tar");
	ck_assert_str_eq(r.tag, "latest");
	ck_assert_int_eq(image_ref_parse("docker-archive:/x:y.tar", &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.kind, IMAGE_REF_DOCKER_ARCHIVE);
	ck_assert_str_eq(r.path, "/x:y.tar");
	ck_assert_int_eq(image_ref_parse("docker.io/library/alpine:3.19", &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.kind, IMAGE_REF_REGISTRY);
	ck_assert_str_eq(r.path, "docker.io/library/alpine:3.19");
	ck_assert_int_eq(image_ref_parse("docker://alpine", &r, err, sizeof(err)), 0);
	ck_assert_str_eq(r.path, "alpine");
	const char *bad[] = { "",    "oci:", "oci::tag", "oci:/x:bad tag", "oci:/x:-t",
		              "-rm", "a b",  "x;rm",     "/abs",           "./rel" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(image_ref_parse(bad[i], &r, err, sizeof(err)) == -EINVAL, "%s",
		              bad[i]);
		ck_assert(err[0] && !strchr(err, '\n'));
	}
}
END_TEST

START_TEST(layout_tags)
{
	struct img a, b;
	char d1[512], d2[512], both[1100], err[512];
	img_make(layout, "X=a", "amd64", &a);
	img_make(layout, "X=b", "amd64", &b);
	img_desc(d1, sizeof(d1), MT_MANIFEST, a.manifest, a.manifest_size, "a", NULL);
	img_desc(d2, sizeof(d2), MT_MANIFEST, b.manifest, b.manifest_size, "b", NULL);
	snprintf(both, sizeof(both), "%s,%s", d1, d2);
	img_write_index(layout, both);
	struct image_src s;
	ck_assert_int_eq(open_ref("oci:%s:a", layout, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s.manifest_digest, a.manifest);
	ck_assert_str_eq(s.config_digest, a.config);
	ck_assert_str_eq(env0(&s), "X=a");
	ck_assert_uint_eq(s.blobs_read, 3);
	ck_assert_uint_eq(s.n_layers, 1);
	ck_assert_str_eq(s.layers[0].digest, a.layer);
	ck_assert_int_eq(s.layers[0].comp, OCI_COMP_NONE);
	struct stat st;
	ck_assert_int_eq(stat(s.layers[0].path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0444);
	ck_assert_uint_eq((uint64_t)st.st_size, s.layers[0].size);
	ck_assert_uint_eq(s.config.n_cmd, 1);
	ck_assert_str_eq(s.config.cmd[0], "/bin/hello");
	ck_assert_str_eq(s.config.workdir, "/srv");
	ck_assert_str_eq(s.config.user, "1000");
	ck_assert_ptr_null(s.config.entrypoint);
	image_src_free(&s);
	ck_assert_int_eq(open_ref("oci:%s:b", layout, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(env0(&s), "X=b");
	ck_assert_str_eq(s.manifest_digest, b.manifest);
	image_src_free(&s);
	/* Again: every blob is cached. */
	ck_assert_int_eq(open_ref("oci:%s:a", layout, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.blobs_read, 0);
	image_src_free(&s);
	ck_assert_int_eq(open_ref("oci:%s", layout, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "2 images; name one with :TAG"));
	ck_assert_int_eq(open_ref("oci:%s:c", layout, &s, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "no image tagged 'c'"));
	cache_clean();
}
END_TEST

START_TEST(index_of_platforms)
{
	struct img arm, amd;
	char d1[512], d2[512], both[1100], err[512], dg[OCI_DIGEST_LEN + 1];
	img_make(layout, "ARCH=arm64", "arm64", &arm);
	img_make(layout, "ARCH=amd64", "amd64", &amd);
	img_desc(d1, sizeof(d1), MT_MANIFEST, arm.manifest, arm.manifest_size, NULL, "arm64");
	img_desc(d2, sizeof(d2), MT_MANIFEST, amd.manifest, amd.manifest_size, NULL, "amd64");
	snprintf(both, sizeof(both), "%s,%s", d1, d2);
	/* Straight in index.json, no tags: linux/amd64 is picked. */
	img_write_index(layout, both);
	struct image_src s;
	ck_assert_int_eq(open_ref("oci:%s", layout, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(env0(&s), "ARCH=amd64");
	ck_assert_str_eq(s.manifest_digest, amd.manifest);
	image_src_free(&s);
	/* An image index blob, tagged: its linux/amd64 manifest. */
	char ix[1400], d[512];
	snprintf(ix, sizeof(ix),
	         "{\"schemaVersion\":2,\"mediaType\":\"" MT_INDEX "\","
	         "\"manifests\":[%s]}",
	         both);
	img_put_blob(layout, ix, strlen(ix), dg);
	img_desc(d, sizeof(d), MT_INDEX, dg, strlen(ix), "multi", NULL);
	img_write_index(layout, d);
	ck_assert_int_eq(open_ref("oci:%s:multi", layout, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(env0(&s), "ARCH=amd64");
	ck_assert_str_eq(s.manifest_digest, amd.manifest);
	image_src_free(&s);
	/* Only an arm64 image: its config refuses it by name. */
	img_run("rm -rf %s", cache);
	img_desc(d, sizeof(d), MT_MANIFEST, arm.manifest, arm.manifest_size, NULL, NULL);
	img_write_index(layout, d);
	ck_assert_int_eq(open_ref("oci:%s", layout, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "architecture 'arm64', not amd64"));
}
END_TEST

START_TEST(os_refused)
{
	struct img w;
	char d[512], err[512];
	img_make_ex(layout, "A=b", "windows", "amd64", MT_TAR, 0, &w);
	img_desc(d, sizeof(d), MT_MANIFEST, w.manifest, w.manifest_size, NULL, NULL);
	img_write_index(layout, d);
	struct image_src s;
	ck_assert_int_eq(open_ref("oci:%s", layout, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "os 'windows', not linux"));
}
END_TEST

START_TEST(digest_mismatch)
{
	struct img im;
	char p[256], err[512];
	make_tagged("K=v", &im);
	/* The layer's bytes changed, its size kept. */
	snprintf(p, sizeof(p), "%s/blobs/sha256/%s", layout, im.layer + 7);
	int fd = open(p, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "Z", 1, 0), 1);
	close(fd);
	struct image_src s;
	ck_assert_int_eq(open_ref("oci:%s", layout, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "digest mismatch"));
	ck_assert_ptr_nonnull(strstr(err, im.layer));
	snprintf(p, sizeof(p), "%s/blobs/sha256/%s", cache, im.layer + 7);
	ck_assert_int_ne(access(p, F_OK), 0);
	cache_clean();
}
END_TEST

START_TEST(size_mismatch)
{
	struct img im;
	char d[512], err[512];
	img_make_ex(layout, "K=v", "linux", "amd64", MT_TAR, 1, &im);
	img_desc(d, sizeof(d), MT_MANIFEST, im.manifest, im.manifest_size, NULL, NULL);
	img_write_index(layout, d);
	struct image_src s;
	ck_assert_int_eq(open_ref("oci:%s", layout, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "size mismatch"));
	ck_assert_ptr_nonnull(strstr(err, "layer 1 of 1"));
	/* The manifest's own size wrong in index.json. */
	img_desc(d, sizeof(d), MT_MANIFEST, im.manifest, im.manifest_size - 1, NULL, NULL);
	img_write_index(layout, d);
	ck_assert_int_eq(open_ref("oci:%s", layout, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "size mismatch"));
	cache_clean();
}
END_TEST

START_TEST(media_type_refused)
{
	struct img im;
	char d[512], err[512];
	img_make_ex(layout, "K=v", "linux", "amd64", "application/vnd.example.weird.tar", 0, &im);
	img_desc(d, sizeof(d), MT_MANIFEST, im.manifest, im.manifest_size, NULL, NULL);
	img_write_index(layout, d);
	struct image_src s;
	ck_assert_int_eq(open_ref("oci:%s", layout, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "'application/vnd.example.weird.tar' is not supported"));
	/* Non-distributable layers are not read either. */
	img_make_ex(layout, "K=v", "linux", "amd64",
	            "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", 0, &im);
	img_desc(d, sizeof(d), MT_MANIFEST, im.manifest, im.manifest_size, NULL, NULL);
	img_write_index(layout, d);
	ck_assert_int_eq(open_ref("oci:%s", layout, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "nondistributable"));
}
END_TEST

START_TEST(missing_blob_named)
{
	struct img im;
	char p[256], err[512];
	make_tagged("K=v", &im);
	snprintf(p, sizeof(p), "%s/blobs/sha256/%s", layout, im.layer + 7);
	ck_assert_int_eq(unlink(p), 0);
	struct image_src s;
	ck_assert_int_eq(open_ref("oci:%s", layout, &s, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, im.layer));
	ck_assert_ptr_nonnull(strstr(err, "(layer 1 of 1) is missing"));
}
END_TEST

/* The layout as a tar at @out, hostile members first: they must never be
 * written anywhere. */
static void write_oci_archive(const char *out, const struct img *im, const char *abs_evil)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_add_filter_none(a);
	ck_assert_int_eq(archive_write_open_filename(a, out), ARCHIVE_OK);
	img_add_member(a, "../evil-up", "x", 1);
	img_add_member(a, abs_evil, "x", 1);
	img_add_member(a, "blobs/sha256/../../evil-climb", "x", 1);
	char p[256], name[128];
	snprintf(p, sizeof(p), "%s/index.json", layout);
	img_add_file(a, "./index.json", p);
	snprintf(p, sizeof(p), "%s/oci-layout", layout);
	img_add_file(a, "oci-layout", p);
	const char *dg[] = { im->manifest, im->config, im->layer };
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/blobs/sha256/%s", layout, dg[i] + 7);
		snprintf(name, sizeof(name), "./blobs/sha256/%s", dg[i] + 7);
		img_add_file(a, name, p);
	}
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
}

START_TEST(oci_archive_hostile)
{
	struct img im;
	char ar[256], abs_evil[128], p[256], err[512];
	make_tagged("K=archived", &im);
	snprintf(ar, sizeof(ar), "%s/in/img.tar", tmp);
	img_run("mkdir -p %s/in", tmp);
	snprintf(abs_evil, sizeof(abs_evil), "%s/abs-evil", tmp);
	write_oci_archive(ar, &im, abs_evil);
	snprintf(p, sizeof(p), "%s/in", tmp);
	ck_assert_int_eq(chdir(p), 0); /* "../evil-up" would land in tmp */
	struct image_src s;
	ck_assert_int_eq(open_ref("oci-archive:%s:latest", ar, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s.manifest_digest, im.manifest);
	ck_assert_str_eq(env0(&s), "K=archived");
	ck_assert_uint_eq(s.blobs_read, 3);
	image_src_free(&s);
	const char *never[] = { "evil-up",
		                "in/evil-up",
		                "abs-evil",
		                "evil-climb",
		                "cache/evil-up",
		                "cache/evil-climb",
		                "cache/blobs/evil-climb" };
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", tmp, never[i]);
		ck_assert_msg(access(p, F_OK) != 0, "%s was written", p);
	}
	ck_assert_msg(access("/tmp/evil-up", F_OK) != 0, "/tmp/evil-up was written");
	ck_assert_int_eq(chdir("/"), 0);
	cache_clean();
	/* The same archive again: no blob is read. */
	ck_assert_int_eq(open_ref("oci-archive:%s", ar, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.blobs_read, 0);
	ck_assert_str_eq(s.manifest_digest, im.manifest);
	image_src_free(&s);
	/* Compressed with tar(1), into a fresh cache: the same image. */
	img_run("rm -rf %s && tar -C %s -czf %s/img.tgz .", cache, layout, tmp);
	snprintf(ar, sizeof(ar), "%s/img.tgz", tmp);
	ck_assert_int_eq(open_ref("oci-archive:%s", ar, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s.manifest_digest, im.manifest);
	ck_assert_uint_eq(s.blobs_read, 3);
	image_src_free(&s);
	/* An archive without the layer: the blob is named. */
	img_run("rm -rf %s && tar -C %s --exclude=%s -cf %s/nolayer.tar .", cache, layout,
	        im.layer + 7, tmp);
	snprintf(ar, sizeof(ar), "%s/nolayer.tar", tmp);
	ck_assert_int_eq(open_ref("oci-archive:%s", ar, &s, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, im.layer));
	ck_assert_ptr_nonnull(strstr(err, "(layer 1 of 1) is missing"));
	/* A blob member whose content is not its name. */
	img_run("rm -rf %s && cp %s/blobs/sha256/%s %s/blobs/sha256/%s", cache, layout,
	        im.config + 7, layout, im.layer + 7);
	img_run("tar -C %s -cf %s/bad.tar .", layout, tmp);
	snprintf(ar, sizeof(ar), "%s/bad.tar", tmp);
	ck_assert_int_eq(open_ref("oci-archive:%s", ar, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "digest mismatch"));
	cache_clean();
}
END_TEST

/* A docker-archive as `docker save` lays it out: layer dirs, the config
 * as <hex>.json, manifest.json last.  @corrupt: the layer is not its
 * diff_id.  @links: the layers are a symlink and a hard link to that tar
 * (which manifest.json does not name), after it, so a second pass reads
 * it ("../../layer.tar" is a hostile decoy). */
static void write_docker_archive(const char *out, const char *env, bool corrupt, bool links)
{
	size_t n;
	char *tar = img_tar("hello", env, &n);
	char layer_dg[OCI_DIGEST_LEN + 1], cfg_dg[OCI_DIGEST_LEN + 1], cfg[1024], man[512],
	    cfg_name[128];
	img_digest(tar, n, layer_dg);
	char diffs[256];
	snprintf(diffs, sizeof(diffs), links ? "\"%s\",\"%s\"" : "\"%s\"", layer_dg, layer_dg);
	snprintf(cfg, sizeof(cfg),
	         "{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"Env\":[\"%s\"],"
	         "\"Entrypoint\":[\"/bin/sh\",\"-c\"]},"
	         "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[%s]}}",
	         env, diffs);
	img_digest(cfg, strlen(cfg), cfg_dg);
	snprintf(cfg_name, sizeof(cfg_name), "%s.json", cfg_dg + 7);
	snprintf(man, sizeof(man), "[{\"Config\":\"%s\",\"RepoTags\":[\"x:1\"],\"Layers\":[%s]}]",
	         cfg_name, links ? "\"sym/layer.tar\",\"hard/layer.tar\"" : "\"abc/layer.tar\"");
	if (corrupt)
		tar[600] ^= 1;
	struct archive *a = archive_write_new();
	archive_write_set_format_gnutar(a);
	archive_write_add_filter_none(a);
	ck_assert_int_eq(archive_write_open_filename(a, out), ARCHIVE_OK);
	img_add_member(a, "abc/VERSION", "1.0", 3);
	img_add_member(a, "abc/layer.tar", tar, n);
	if (links) {
		img_add_link(a, "sym/layer.tar", "../abc/./layer.tar", false);
		img_add_link(a, "hard/layer.tar", "abc/layer.tar", true);
	}
	img_add_member(a, "../../layer.tar", tar, n);
	img_add_member(a, cfg_name, cfg, strlen(cfg));
	img_add_member(a, "manifest.json", man, strlen(man));
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	free(tar);
}

START_TEST(docker_archive)
{
	char ar[256], err[512], first[OCI_DIGEST_LEN + 1];
	snprintf(ar, sizeof(ar), "%s/saved.tar", tmp);
	write_docker_archive(ar, "D=1", false, false);
	struct image_src s;
	ck_assert_int_eq(open_ref("docker-archive:%s", ar, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(env0(&s), "D=1");
	ck_assert_uint_eq(s.config.n_entrypoint, 2);
	ck_assert_str_eq(s.config.entrypoint[1], "-c");
	ck_assert_uint_eq(s.n_layers, 1);
	ck_assert_int_eq(s.layers[0].comp, OCI_COMP_NONE);
	ck_assert_uint_eq(s.blobs_read, 3); /* config, layer, the manifest made */
	snprintf(first, sizeof(first), "%s", s.manifest_digest);
	image_src_free(&s);
	/* Again: the same identity, nothing read. */
	ck_assert_int_eq(open_ref("docker-archive:%s", ar, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s.manifest_digest, first);
	ck_assert_uint_eq(s.blobs_read, 0);
	image_src_free(&s);
	cache_clean();
	/* A layer that is not its diff_id. */
	snprintf(ar, sizeof(ar), "%s/bad.tar", tmp);
	write_docker_archive(ar, "D=2", true, false);
	ck_assert_int_eq(open_ref("docker-archive:%s", ar, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "layer 1: member 'abc/layer.tar': digest mismatch"));
	cache_clean();
	/* Layers that are links to another member (docker save links a
	 * layer it has written already). */
	img_run("rm -rf %s", cache);
	snprintf(ar, sizeof(ar), "%s/links.tar", tmp);
	write_docker_archive(ar, "D=3", false, true);
	ck_assert_int_eq(open_ref("docker-archive:%s", ar, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.n_layers, 2);
	ck_assert_str_eq(s.layers[1].digest, s.layers[0].digest);
	ck_assert_uint_eq(s.blobs_read, 3);
	ck_assert_str_eq(env0(&s), "D=3");
	image_src_free(&s);
}
END_TEST

START_TEST(umoci_layout)
{
	char err[512], ar[256];
	img_run("cd %s && umoci init --layout u >/dev/null && umoci new --image u:latest && "
	        "echo hi >hello && umoci insert --image u:latest hello /etc/hello >/dev/null && "
	        "umoci config --image u:latest --config.env FOO=bar --config.cmd /bin/sh "
	        "--config.workingdir /srv",
	        tmp);
	struct image_src s;
	char u[128], first[OCI_DIGEST_LEN + 1], cfg[OCI_DIGEST_LEN + 1];
	snprintf(u, sizeof(u), "%s/u", tmp);
	ck_assert_int_eq(open_ref("oci:%s:latest", u, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.n_layers, 1);
	ck_assert_int_eq(s.layers[0].comp, OCI_COMP_GZIP);
	ck_assert_str_eq(env0(&s), "FOO=bar");
	ck_assert_str_eq(s.config.cmd[0], "/bin/sh");
	ck_assert_str_eq(s.config.workdir, "/srv");
	snprintf(first, sizeof(first), "%s", s.manifest_digest);
	image_src_free(&s);
	/* The same layout as an oci-archive: the same image. */
	img_run("rm -rf %s && tar -C %s -cf %s/u.tar .", cache, u, tmp);
	snprintf(ar, sizeof(ar), "%s/u.tar", tmp);
	ck_assert_int_eq(open_ref("oci-archive:%s:latest", ar, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s.manifest_digest, first);
	snprintf(cfg, sizeof(cfg), "%s", s.config_digest);
	image_src_free(&s);
	/* What skopeo writes from it, locally: a layout and a docker-archive
	 * (a layer file named <hex>.tar, a symlink to it in a layer folder). */
	img_run("cd %s && skopeo --insecure-policy copy --quiet oci:u:latest oci:s:v1 && "
	        "skopeo --insecure-policy copy --quiet oci:u:latest docker-archive:d.tar:x/y:1",
	        tmp);
	snprintf(u, sizeof(u), "%s/s", tmp);
	ck_assert_int_eq(open_ref("oci:%s:v1", u, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s.config_digest, cfg);
	ck_assert_str_eq(env0(&s), "FOO=bar");
	image_src_free(&s);
	snprintf(ar, sizeof(ar), "%s/d.tar", tmp);
	ck_assert_int_eq(open_ref("docker-archive:%s", ar, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s.config_digest, cfg);
	ck_assert_int_eq(s.layers[0].comp, OCI_COMP_NONE);
	ck_assert_str_eq(s.config.workdir, "/srv");
	image_src_free(&s);
}
END_TEST

/* A fake skopeo in @dir: the script's body. */
static void fake_skopeo(const char *dir, const char *body)
{
	char p[256], text[1024];
	img_run("mkdir -p %s", dir);
	snprintf(p, sizeof(p), "%s/skopeo", dir);
	snprintf(text, sizeof(text), "#!/bin/sh\n%s\n", body);
	img_write_file(p, text, strlen(text));
	ck_assert_int_eq(chmod(p, 0755), 0);
}

START_TEST(registry_skopeo)
{
	struct oci_pull_cmd c;
	ck_assert_int_eq(oci_pull_cmd(&c, "skopeo", "docker.io/library/x:1", "/c/tmp/p", "cove"),
	                 0);
	const char *want[] = { "skopeo",
		               "copy",
		               "--quiet",
		               "--override-os",
		               "linux",
		               "--override-arch",
		               "amd64",
		               "docker://docker.io/library/x:1",
		               "oci:/c/tmp/p:cove",
		               NULL };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_pstr_eq(c.argv[i], want[i]);

	char *path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	char bin[128], err[512], args[256], cmd[512];
	struct image_src s;
	/* No skopeo in PATH. */
	img_run("mkdir -p %s/empty %s/bin", tmp, tmp);
	snprintf(bin, sizeof(bin), "%s/empty", tmp);
	setenv("PATH", bin, 1);
	ck_assert_int_eq(open_ref("%s", "x:1", &s, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "needs skopeo, which is not installed"));
	/* A skopeo that fails: its last line of stderr, one line. */
	snprintf(bin, sizeof(bin), "%s/bin", tmp);
	snprintf(cmd, sizeof(cmd), "%s:/usr/bin:/bin", bin);
	setenv("PATH", cmd, 1);
	snprintf(args, sizeof(args), "%s/args", tmp);
	snprintf(cmd, sizeof(cmd),
	         "echo \"$@\" >%s\necho 'Getting image source signatures' >&2\n"
	         "echo 'time=\"x\" level=fatal msg=\"reading manifest 1: unauthorized\"' >&2\n"
	         "exit 1",
	         args);
	fake_skopeo(bin, cmd);
	ck_assert_int_eq(open_ref("%s", "docker.io/library/x:1", &s, err, sizeof(err)), -EIO);
	ck_assert_ptr_nonnull(strstr(err, "unauthorized"));
	ck_assert_ptr_null(strstr(err, "signatures"));
	size_t n;
	struct stat st;
	int e;
	char *got = file_slurp(args, 4096, &n, &st, &e);
	ck_assert_ptr_nonnull(got);
	char pre[256];
	snprintf(pre, sizeof(pre),
	         "copy --quiet --override-os linux --override-arch amd64 "
	         "docker://docker.io/library/x:1 oci:%s/tmp/pull-",
	         cache);
	ck_assert_msg(!strncmp(got, pre, strlen(pre)), "args: %s", got);
	ck_assert_ptr_nonnull(strstr(got, ":cove\n"));
	free(got);
	/* A skopeo that hangs is killed at the deadline. */
	fake_skopeo(bin, "sleep 30");
	ck_assert_int_eq(image_src_open(cache, "x:1", 300, &s, err, sizeof(err)), -ETIMEDOUT);
	ck_assert_ptr_nonnull(strstr(err, "no end within 0.3 s"));
	/* A skopeo that "pulls" (copies a layout): read as oci:, then removed. */
	struct img im;
	make_tagged("R=1", &im);
	snprintf(cmd, sizeof(cmd),
	         "d=${8#oci:}; d=${d%%:cove}; cp -r %s/. \"$d\" && "
	         "sed -i 's/\"latest\"/\"cove\"/' \"$d/index.json\"",
	         layout);
	fake_skopeo(bin, cmd);
	ck_assert_int_eq(open_ref("%s", "x:1", &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s.manifest_digest, im.manifest);
	ck_assert_str_eq(env0(&s), "R=1");
	image_src_free(&s);
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s/tmp)\"", cache);
	setenv("PATH", path, 1);
	img_run("%s", cmd);
	free(path);
}
END_TEST

START_TEST(json_parsers)
{
	char err[256];
	struct image_config c;
	char(*diff)[OCI_DIGEST_LEN + 1];
	size_t nd;
	const char *dup = "{\"os\":\"linux\",\"os\":\"linux\",\"architecture\":\"amd64\"}";
	ck_assert_int_eq(oci_parse_config(dup, strlen(dup), &c, NULL, NULL, err, sizeof(err)),
	                 -EINVAL);
	const char *noeq =
	    "{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"Env\":[\"X\"]}}";
	ck_assert_int_eq(oci_parse_config(noeq, strlen(noeq), &c, NULL, NULL, err, sizeof(err)),
	                 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "'Env' entry 1 is not KEY=VALUE"));
	const char *nodiff = "{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":null}";
	ck_assert_int_eq(oci_parse_config(nodiff, strlen(nodiff), &c, NULL, NULL, err, sizeof(err)),
	                 0);
	ck_assert_uint_eq(c.n_env, 0);
	image_config_free(&c);
	ck_assert_int_eq(oci_parse_config(nodiff, strlen(nodiff), &c, &diff, &nd, err, sizeof(err)),
	                 -EINVAL);
	ck_assert_ptr_null(diff);
	const char *nul =
	    "{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"User\":\"a\\u0000b\"}}";
	ck_assert_int_eq(oci_parse_config(nul, strlen(nul), &c, NULL, NULL, err, sizeof(err)),
	                 -EINVAL);
	struct docker_manifest d;
	const char *two =
	    "[{\"Config\":\"a.json\",\"Layers\":[\"l\"]},{\"Config\":\"b\",\"Layers\":[\"l\"]}]";
	ck_assert_int_eq(oci_parse_docker_manifest(two, strlen(two), &d, err, sizeof(err)),
	                 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "holds 2 images"));
	const char *climb = "[{\"Config\":\"a.json\",\"Layers\":[\"../l\"]}]";
	ck_assert_int_eq(oci_parse_docker_manifest(climb, strlen(climb), &d, err, sizeof(err)),
	                 -EINVAL);
	ck_assert_ptr_nonnull(oci_member_name("./a/b"));
	ck_assert_str_eq(oci_member_name(".//./a/b"), "a/b");
	ck_assert_ptr_null(oci_member_name("/a"));
	ck_assert_ptr_null(oci_member_name("a/../b"));
	ck_assert_ptr_null(oci_member_name(".."));
	ck_assert_ptr_nonnull(oci_member_name("a/..b"));
	ck_assert(!oci_digest_valid("sha512:00"));
	ck_assert(!oci_digest_valid("sha256:ABCDEF"));
	struct oci_index ix;
	const char *empty = "{\"schemaVersion\":2,\"manifests\":[]}";
	ck_assert_int_eq(oci_parse_index(empty, strlen(empty), &ix, err, sizeof(err)), -EINVAL);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("image_oci");
	TCase *t = tcase_create("oci");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, ref_parse);
	tcase_add_test(t, layout_tags);
	tcase_add_test(t, index_of_platforms);
	tcase_add_test(t, os_refused);
	tcase_add_test(t, digest_mismatch);
	tcase_add_test(t, size_mismatch);
	tcase_add_test(t, media_type_refused);
	tcase_add_test(t, missing_blob_named);
	tcase_add_test(t, oci_archive_hostile);
	tcase_add_test(t, docker_archive);
	tcase_add_test(t, umoci_layout);
	tcase_add_test(t, registry_skopeo);
	tcase_add_test(t, json_parsers);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
