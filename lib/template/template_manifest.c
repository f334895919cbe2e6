/* A template's manifest (template.json) and its inputs hash: the pure part
 * of templates (lib/template.h), parsed from a file we may not have
 * written ourselves (a store is a directory someone could edit), so every
 * field is checked. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove_limits.h"
#include "errf.h"
#include "lib/base/cove_types.h"
#include "lib/base/sha256.h"
#include "lib/template/template_manifest.h"

#define MANIFEST_MAX     (1 << 20)
#define HASH_BLOCK       4096
#define DISK_SIZE_MAX    (64ULL << 40)
#define MEMORY_MAX_MIB   (1ULL << 20)
#define GUEST_PATH_MAX   4096
#define HASH_FILE_CHUNKS 256 /* blocks per read */

bool cove_template_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > COVE_TEMPLATE_NAME_MAX || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

void cove_template_spec_free(struct cove_template_spec *s)
{
	for (size_t i = 0; i < s->nsteps; i++) {
		free(s->steps[i].run);
		free(s->steps[i].local);
		free(s->steps[i].guest);
	}
	free(s->steps);
	free(s->vmm);
	free(s->kernel);
	free(s->image);
	memset(s, 0, sizeof(*s));
}

static bool path_ok(const char *p, size_t max)
{
	return p && p[0] == '/' && strlen(p) < max;
}

static struct cove_template_step *step_new(struct cove_template_spec *s, char *err, size_t errlen)
{
	if (s->nsteps >= COVE_TEMPLATE_STEPS_MAX) {
		errf(err, errlen, -EINVAL, "a template has at most %d steps",
		     COVE_TEMPLATE_STEPS_MAX);
		return NULL;
	}
	struct cove_template_step *n = realloc(s->steps, (s->nsteps + 1) * sizeof(*n));
	if (!n) {
		errf(err, errlen, -ENOMEM, "out of memory");
		return NULL;
	}
	s->steps = n;
	memset(&n[s->nsteps], 0, sizeof(n[0]));
	return &n[s->nsteps];
}

int cove_template_add_run(struct cove_template_spec *s, const char *cmd, char *err, size_t errlen)
{
	if (!cmd || !*cmd || strlen(cmd) > COVE_TEMPLATE_RUN_MAX)
		return errf(err, errlen, -EINVAL, "--run needs a command of 1 to %d bytes",
		            COVE_TEMPLATE_RUN_MAX);
	struct cove_template_step *st = step_new(s, err, errlen);
	if (!st)
		return -EINVAL;
	st->kind = COVE_STEP_RUN;
	if (!(st->run = strdup(cmd)))
		return errf(err, errlen, -ENOMEM, "out of memory");
	s->nsteps++;
	return 0;
}

int cove_template_add_put(struct cove_template_spec *s, const char *local, const char *guest,
                          char *err, size_t errlen)
{
	if (!path_ok(guest, GUEST_PATH_MAX))
		return errf(err, errlen, -EINVAL, "--put %s:%s: the guest path must be absolute",
		            local, guest ? guest : "");
	char abs[PATH_MAX];
	if (!realpath(local, abs))
		return errf(err, errlen, -errno, "--put %s: %s", local, strerror(errno));
	struct stat st;
	if (stat(abs, &st) < 0 || !S_ISREG(st.st_mode))
		return errf(err, errlen, -EINVAL, "--put %s: not a regular file", local);
	struct cove_template_step *t = step_new(s, err, errlen);
	if (!t)
		return -EINVAL;
	t->kind = COVE_STEP_PUT;
	t->local = strdup(abs);
	t->guest = strdup(guest);
	s->nsteps++; /* counted first, so that spec_free frees what was copied */
	if (!t->local || !t->guest)
		return errf(err, errlen, -ENOMEM, "out of memory");
	return 0;
}

/* ---- the manifest ---- */

static int get_str(json_t *o, const char *key, size_t max, bool abs, char **out, char *err,
                   size_t errlen)
{
	json_t *v = json_object_get(o, key);
	const char *s = json_string_value(v);
	if (!s || json_string_length(v) == 0 || json_string_length(v) >= max ||
	    strlen(s) != json_string_length(v) || (abs && s[0] != '/'))
		return errf(err, errlen, -EINVAL,
		            "template.json: '%s' must be %s of under %zu bytes", key,
		            abs ? "an absolute path" : "a string", max);
	if (!(*out = strdup(s)))
		return errf(err, errlen, -ENOMEM, "out of memory");
	return 0;
}

static int get_uint(json_t *o, const char *key, uint64_t lo, uint64_t hi, uint64_t *out, char *err,
                    size_t errlen)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) < lo || (uint64_t)json_integer_value(v) > hi)
		return errf(err, errlen, -EINVAL,
		            "template.json: '%s' must be an integer from %llu to %llu", key,
		            (unsigned long long)lo, (unsigned long long)hi);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int parse_step(json_t *j, struct cove_template_spec *s, char *err, size_t errlen)
{
	if (!json_is_object(j))
		return errf(err, errlen, -EINVAL, "template.json: a step must be an object");
	struct cove_template_step *t = step_new(s, err, errlen);
	if (!t)
		return -EINVAL;
	int r;
	if (json_object_get(j, "run")) {
		t->kind = COVE_STEP_RUN;
		s->nsteps++;
		if (json_object_size(j) != 1)
			return errf(err, errlen, -EINVAL,
			            "template.json: a run step has only 'run'");
		return get_str(j, "run", COVE_TEMPLATE_RUN_MAX + 1, false, &t->run, err, errlen);
	}
	t->kind = COVE_STEP_PUT;
	s->nsteps++;
	if (json_object_size(j) != 2)
		return errf(
		    err, errlen, -EINVAL,
		    "template.json: a step is {\"run\": CMD} or {\"put\": LOCAL, \"to\": GUEST}");
	if ((r = get_str(j, "put", PATH_MAX, true, &t->local, err, errlen)) < 0)
		return r;
	return get_str(j, "to", GUEST_PATH_MAX, true, &t->guest, err, errlen);
}

int template_manifest_parse(const char *text, size_t len, struct cove_template_manifest *m,
                            char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	if (len > MANIFEST_MAX)
		return errf(err, errlen, -EINVAL, "template.json is larger than %d bytes",
		            MANIFEST_MAX);
	json_error_t je;
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(o)) {
		json_decref(o);
		return errf(err, errlen, -EINVAL, "template.json: not a JSON object (%s)",
		            o ? "another type" : je.text);
	}
	static const char *const known[] = { "version",    "name",      "inputs_hash", "created",
		                             "vmm",        "kernel",    "image",       "cpus",
		                             "memory_mib", "disk_size", "net",         "steps" };
	int r = 0;
	uint64_t v;
	const char *k;
	json_t *jv;
	json_object_foreach(o, k, jv)
	{
		bool ok = false;
		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			ok = ok || !strcmp(k, known[i]);
		if (!ok) {
			r = errf(err, errlen, -EINVAL, "template.json: unknown key '%.64s'", k);
			goto out;
		}
	}
	struct cove_template_spec *s = &m->spec;
	char *name = NULL, *hash = NULL;
	if ((r = get_uint(o, "version", 1, 1, &v, err, errlen)) < 0 ||
	    (r = get_str(o, "name", COVE_TEMPLATE_NAME_MAX + 1, false, &name, err, errlen)) < 0)
		goto out;
	if (!cove_template_name_valid(name)) {
		free(name);
		r = errf(err, errlen, -EINVAL,
		         "template.json: 'name' is not a valid template name");
		goto out;
	}
	snprintf(s->name, sizeof(s->name), "%s", name);
	free(name);
	if ((r = get_str(o, "inputs_hash", SHA256_HEX, false, &hash, err, errlen)) < 0)
		goto out;
	bool hex = strlen(hash) == SHA256_HEX - 1;
	for (size_t i = 0; hex && hash[i]; i++)
		hex = (hash[i] >= '0' && hash[i] <= '9') || (hash[i] >= 'a' && hash[i] <= 'f');
	if (hex)
		memcpy(m->inputs_hash, hash, SHA256_HEX);
	free(hash);
	if (!hex) {
		r = errf(err, errlen, -EINVAL,
		         "template.json: 'inputs_hash' must be 64 hex digits");
		goto out;
	}
	if ((r = get_uint(o, "created", 0, (uint64_t)1 << 40, &v, err, errlen)) < 0)
		goto out;
	m->created = (int64_t)v;
	if ((r = get_str(o, "vmm", PATH_MAX, true, &s->vmm, err, errlen)) < 0 ||
	    (r = get_str(o, "kernel", PATH_MAX, true, &s->kernel, err, errlen)) < 0 ||
	    (r = get_str(o, "image", PATH_MAX, true, &s->image, err, errlen)) < 0 ||
	    (r = get_uint(o, "cpus", 1, COVE_CPUS_MAX, &v, err, errlen)) < 0)
		goto out;
	s->cpus = (unsigned int)v;
	if ((r = get_uint(o, "memory_mib", COVE_MEMORY_MIN_MIB, MEMORY_MAX_MIB, &s->memory_mib, err,
	                  errlen)) < 0 ||
	    (r = get_uint(o, "disk_size", 0, DISK_SIZE_MAX, &s->disk_size, err, errlen)) < 0)
		goto out;
	const char *net = json_string_value(json_object_get(o, "net"));
	s->net = !net                   ? -1
	         : !strcmp(net, "off")  ? COVE_TEMPLATE_NET_OFF
	         : !strcmp(net, "none") ? COVE_TEMPLATE_NET_NONE
	         : !strcmp(net, "open") ? COVE_TEMPLATE_NET_OPEN
	                                : -1;
	if (s->net < 0) {
		r = errf(err, errlen, -EINVAL, "template.json: 'net' must be off, none or open");
		goto out;
	}
	json_t *steps = json_object_get(o, "steps");
	if (!json_is_array(steps) || json_array_size(steps) > COVE_TEMPLATE_STEPS_MAX) {
		r = errf(err, errlen, -EINVAL,
		         "template.json: 'steps' must be an array of at most %d",
		         COVE_TEMPLATE_STEPS_MAX);
		goto out;
	}
	size_t i;
	json_array_foreach(steps, i, jv)
	{
		if ((r = parse_step(jv, s, err, errlen)) < 0)
			goto out;
	}
out:
	json_decref(o);
	if (r < 0)
		cove_template_spec_free(&m->spec);
	return r;
}

char *template_manifest_dump(const struct cove_template_manifest *m)
{
	const struct cove_template_spec *s = &m->spec;
	json_t *steps = json_array();
	for (size_t i = 0; steps && i < s->nsteps; i++) {
		const struct cove_template_step *t = &s->steps[i];
		json_t *j = t->kind == COVE_STEP_RUN
		                ? json_pack("{s:s}", "run", t->run)
		                : json_pack("{s:s, s:s}", "put", t->local, "to", t->guest);
		if (!j || json_array_append_new(steps, j) < 0) {
			json_decref(steps);
			return NULL;
		}
	}
	static const char *const nets[] = { "off", "none", "open" };
	const char *net = s->net >= 0 && s->net <= COVE_TEMPLATE_NET_OPEN ? nets[s->net] : "off";
	json_t *o =
	    json_pack("{s:i, s:s, s:s, s:I, s:s, s:s, s:s, s:i, s:I, s:I, s:s, s:o}", "version", 1,
	              "name", s->name, "inputs_hash", m->inputs_hash, "created",
	              (json_int_t)m->created, "vmm", s->vmm, "kernel", s->kernel, "image", s->image,
	              "cpus", (int)s->cpus, "memory_mib", (json_int_t)s->memory_mib, "disk_size",
	              (json_int_t)s->disk_size, "net", net, "steps", steps);
	char *text = o ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	return text;
}

/* ---- hashes ---- */

static void put_field(struct sha256 *h, const char *key, const char *val)
{
	char head[96];
	int n = snprintf(head, sizeof(head), "%s %zu ", key, strlen(val));
	sha256_update(h, head, (size_t)n);
	sha256_update(h, val, strlen(val));
	sha256_update(h, "\n", 1);
}

static void put_num(struct sha256 *h, const char *key, uint64_t v)
{
	char num[32];
	snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
	put_field(h, key, num);
}

void template_hash_inputs(const struct cove_template_spec *s, const char *vmm, const char *kernel,
                          const char *image, const char *const *puts, char hex[SHA256_HEX])
{
	/* Every field is "key length value\n": no two input lists hash the
	 * same text.  Paths are not inputs, contents are. */
	struct sha256 h;
	sha256_init(&h);
	put_field(&h, "cove-template", "1");
	put_field(&h, "vmm", vmm);
	put_field(&h, "kernel", kernel);
	put_field(&h, "image", image);
	put_num(&h, "cpus", s->cpus);
	put_num(&h, "memory_mib", s->memory_mib);
	put_num(&h, "disk_size", s->disk_size);
	put_num(&h, "net", (uint64_t)s->net);
	size_t k = 0;
	for (size_t i = 0; i < s->nsteps; i++) {
		if (s->steps[i].kind == COVE_STEP_RUN) {
			put_field(&h, "run", s->steps[i].run);
		} else {
			put_field(&h, "put", puts[k++]);
			put_field(&h, "to", s->steps[i].guest);
		}
	}
	uint8_t d[SHA256_LEN];
	sha256_final(&h, d);
	sha256_hex(d, hex);
}

int template_file_hash(int fd, char hex[SHA256_HEX])
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	struct sha256 h;
	sha256_init(&h);
	char head[48];
	int n = snprintf(head, sizeof(head), "size %lld\n", (long long)st.st_size);
	sha256_update(&h, head, (size_t)n);
	uint8_t *buf = malloc(HASH_BLOCK * HASH_FILE_CHUNKS);
	static const uint8_t zero[HASH_BLOCK];
	if (!buf)
		return -ENOMEM;
	int r = 0;
	off_t off = 0;
	while (off < st.st_size) {
		/* Holes read as zeros: skip them without reading. */
		off_t data = lseek(fd, off, SEEK_DATA);
		if (data < 0) {
			if (errno == ENXIO)
				break; /* only a hole is left */
			data = off;    /* no SEEK_DATA here: read everything */
		}
		off = data - data % HASH_BLOCK;
		ssize_t got = pread(fd, buf, HASH_BLOCK * HASH_FILE_CHUNKS, off);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if (got == 0)
			break;
		for (ssize_t b = 0; b < got; b += HASH_BLOCK) {
			size_t blen =
			    (size_t)(got - b) < HASH_BLOCK ? (size_t)(got - b) : HASH_BLOCK;
			if (!memcmp(buf + b, zero, blen))
				continue;
			uint8_t idx[8];
			uint64_t bi = (uint64_t)(off + b) / HASH_BLOCK;
			for (int i = 0; i < 8; i++)
				idx[i] = (uint8_t)(bi >> (8 * i));
			sha256_update(&h, idx, sizeof(idx));
			sha256_update(&h, buf + b, blen);
			if (blen < HASH_BLOCK)
				sha256_update(&h, zero, HASH_BLOCK - blen);
		}
		off += got;
	}
	free(buf);
	if (r < 0)
		return r;
	uint8_t d[SHA256_LEN];
	sha256_final(&h, d);
	sha256_hex(d, hex);
	return 0;
}
