/* A template's manifest (template.json) and its inputs hash: the pure part
 * of templates (lib/template.h), parsed from a file we may not have
 * written ourselves (a store is a directory someone could edit), so every
 * field is checked. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
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

void template_note(const struct cove_template_io *io, const char *fmt, ...)
{
	if (!io || !io->note)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	io->note(io->opaque, line);
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && (n ? i < n : v[i] != NULL); i++)
		free(v[i]);
	free(v);
}

void cove_template_spec_free(struct cove_template_spec *s)
{
	for (size_t i = 0; i < s->nsteps; i++) {
		struct cove_template_step *t = &s->steps[i];
		free(t->run);
		free(t->local);
		free(t->guest);
		free(t->chown);
		strv_free(t->srcs, t->nsrcs);
	}
	free(s->steps);
	free(s->vmm);
	free(s->kernel);
	free(s->image);
	free(s->from);
	free(s->from_template);
	free(s->agent);
	free(s->start_cmd);
	free(s->ready_cmd);
	memset(s, 0, sizeof(*s));
}

void cove_template_config_free(struct cove_template_config *c)
{
	strv_free(c->env, c->nenv);
	free(c->workdir);
	free(c->user);
	strv_free(c->entrypoint, 0);
	strv_free(c->cmd, 0);
	memset(c, 0, sizeof(*c));
}

void cove_template_manifest_free(struct cove_template_manifest *m)
{
	cove_template_spec_free(&m->spec);
	cove_template_config_free(&m->config);
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

/* "K=V" with a non-empty name of [A-Za-z0-9_] not starting with a digit. */
static bool env_ok(const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv || (*kv >= '0' && *kv <= '9'))
		return false;
	for (const char *c = kv; c < eq; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '_'))
			return false;
	return true;
}

/* "user[:group]": names or numbers, no space, '/' or second ':'. */
static bool user_ok(const char *u)
{
	size_t n = strlen(u);
	if (!n || n > 256 || u[0] == ':' || u[n - 1] == ':')
		return false;
	const char *colon = strchr(u, ':');
	if (colon && strchr(colon + 1, ':'))
		return false;
	for (const char *c = u; *c; c++)
		if (*c <= ' ' || *c == '/' || *c == 0x7f)
			return false;
	return true;
}

/* A JSON array of strings. */
static bool strv_ok(const char *text)
{
	json_t *a = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	bool ok = json_is_array(a);
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e) ok = ok && json_is_string(e);
	json_decref(a);
	return ok;
}

int cove_template_add_step(struct cove_template_spec *s, enum cove_template_step_kind kind,
                           const char *arg, char *err, size_t errlen)
{
	static const char *const names[] = { [COVE_STEP_RUN] = "RUN",
		                             [COVE_STEP_ENV] = "ENV",
		                             [COVE_STEP_WORKDIR] = "WORKDIR",
		                             [COVE_STEP_USER] = "USER",
		                             [COVE_STEP_ARG] = "ARG",
		                             [COVE_STEP_CMD] = "CMD",
		                             [COVE_STEP_ENTRYPOINT] = "ENTRYPOINT" };
	if (kind == COVE_STEP_RUN)
		return cove_template_add_run(s, arg, err, errlen);
	if (kind != COVE_STEP_ENV && kind != COVE_STEP_WORKDIR && kind != COVE_STEP_USER &&
	    kind != COVE_STEP_ARG && kind != COVE_STEP_CMD && kind != COVE_STEP_ENTRYPOINT)
		return errf(err, errlen, -EINVAL, "not a one-argument step");
	const char *n = names[kind];
	if (!arg || !*arg || strlen(arg) > COVE_TEMPLATE_RUN_MAX)
		return errf(err, errlen, -EINVAL, "%s needs 1 to %d bytes", n,
		            COVE_TEMPLATE_RUN_MAX);
	if ((kind == COVE_STEP_ENV || kind == COVE_STEP_ARG) && !env_ok(arg))
		return errf(err, errlen, -EINVAL, "%s '%.64s': not NAME=value", n, arg);
	if (kind == COVE_STEP_WORKDIR && !path_ok(arg, GUEST_PATH_MAX))
		return errf(err, errlen, -EINVAL, "WORKDIR '%.64s': not an absolute path", arg);
	if ((kind == COVE_STEP_CMD || kind == COVE_STEP_ENTRYPOINT) && !strv_ok(arg))
		return errf(err, errlen, -EINVAL, "%s: not a JSON array of strings", n);
	if (kind == COVE_STEP_USER && !user_ok(arg))
		return errf(err, errlen, -EINVAL, "USER '%.64s': not user[:group]", arg);
	struct cove_template_step *st = step_new(s, err, errlen);
	if (!st)
		return -EINVAL;
	st->kind = kind;
	if (!(st->run = strdup(arg)))
		return errf(err, errlen, -ENOMEM, "out of memory");
	s->nsteps++;
	return 0;
}

static int copy_step(struct cove_template_spec *s, const char *local, bool folder, const char *dest,
                     const char *chown, struct cove_template_step **out, char *err, size_t errlen)
{
	if (!path_ok(dest, GUEST_PATH_MAX))
		return errf(err, errlen, -EINVAL, "COPY to '%.64s': not an absolute path",
		            dest ? dest : "");
	if (chown && !user_ok(chown))
		return errf(err, errlen, -EINVAL, "COPY --chown '%.64s': not user[:group]", chown);
	char abs[PATH_MAX];
	struct stat st;
	if (!realpath(local, abs) || stat(abs, &st) < 0)
		return errf(err, errlen, -errno, "COPY from '%s': %s", local, strerror(errno));
	if (folder ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
		return errf(err, errlen, -EINVAL, "COPY from '%s': not a %s", local,
		            folder ? "folder" : "regular file");
	struct cove_template_step *t = step_new(s, err, errlen);
	if (!t)
		return -EINVAL;
	t->kind = COVE_STEP_COPY;
	s->nsteps++;
	t->local = strdup(abs);
	t->guest = strdup(dest);
	t->chown = chown ? strdup(chown) : NULL;
	if (!t->local || !t->guest || (chown && !t->chown))
		return errf(err, errlen, -ENOMEM, "out of memory");
	*out = t;
	return 0;
}

int cove_template_add_copy(struct cove_template_spec *s, const char *context,
                           const char *const *srcs, size_t nsrcs, const char *dest,
                           const char *chown, char *err, size_t errlen)
{
	if (!nsrcs || nsrcs > COVE_TEMPLATE_SRCS_MAX)
		return errf(err, errlen, -EINVAL, "COPY needs 1 to %d sources",
		            COVE_TEMPLATE_SRCS_MAX);
	for (size_t i = 0; i < nsrcs; i++)
		if (!srcs[i] || strlen(srcs[i]) >= GUEST_PATH_MAX || srcs[i][0] == '/')
			return errf(err, errlen, -EINVAL,
			            "COPY source '%.64s': not a path inside the context",
			            srcs[i] ? srcs[i] : "");
	struct cove_template_step *t;
	int r = copy_step(s, context, true, dest, chown, &t, err, errlen);
	if (r < 0)
		return r;
	if (!(t->srcs = calloc(nsrcs, sizeof(*t->srcs))))
		return errf(err, errlen, -ENOMEM, "out of memory");
	for (; t->nsrcs < nsrcs; t->nsrcs++)
		if (!(t->srcs[t->nsrcs] = strdup(srcs[t->nsrcs])))
			return errf(err, errlen, -ENOMEM, "out of memory");
	return 0;
}

int cove_template_add_copy_archive(struct cove_template_spec *s, const char *tar, const char *dest,
                                   const char *chown, char *err, size_t errlen)
{
	struct cove_template_step *t;
	return copy_step(s, tar, false, dest, chown, &t, err, errlen);
}

int cove_template_set(struct cove_template_spec *s, char **field, const char *value, char *err,
                      size_t errlen)
{
	(void)s;
	if (!value || !*value || strlen(value) > COVE_TEMPLATE_RUN_MAX)
		return errf(err, errlen, -EINVAL, "needs 1 to %d bytes", COVE_TEMPLATE_RUN_MAX);
	char *v = strdup(value);
	if (!v)
		return errf(err, errlen, -ENOMEM, "out of memory");
	free(*field);
	*field = v;
	return 0;
}

int cove_template_set_agent(struct cove_template_spec *s, char *err, size_t errlen)
{
	char p[PATH_MAX + 16];
	const char *env = getenv("COVE_AGENT");
	if (env && *env) {
		snprintf(p, sizeof(p), "%s", env);
	} else {
		snprintf(p, sizeof(p), "%s", s->vmm ? s->vmm : "");
		char *slash = strrchr(p, '/');
		if (!slash)
			return errf(err, errlen, -EINVAL, "no cove-vmm to find cove-agent beside");
		snprintf(slash + 1, sizeof(p) - (size_t)(slash + 1 - p), "cove-agent");
	}
	char *a = realpath(p, NULL);
	if (!a)
		return errf(err, errlen, -errno, "cove-agent '%s': %s", p, strerror(errno));
	free(s->agent);
	s->agent = a;
	return 0;
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

static void put_key(struct sha256 *h, const char *key, const char *val)
{
	put_field(h, key, val ? val : "");
}

/* Adds what one step is to h (the same text for the same step). */
static void put_step(struct sha256 *h, const struct cove_template_step *t, const char *input)
{
	static const char *const kinds[] = {
		[COVE_STEP_RUN] = "run",
		[COVE_STEP_PUT] = "put",
		[COVE_STEP_COPY] = "copy",
		[COVE_STEP_ENV] = "env",
		[COVE_STEP_WORKDIR] = "workdir",
		[COVE_STEP_USER] = "user",
		[COVE_STEP_ARG] = "arg",
		[COVE_STEP_CMD] = "cmd",
		[COVE_STEP_ENTRYPOINT] = "entrypoint",
	};
	_Static_assert(sizeof(kinds) / sizeof(kinds[0]) == COVE_STEP_ENTRYPOINT + 1, "a name each");
	put_field(h, "step", kinds[t->kind]);
	put_key(h, "arg", t->run);
	put_key(h, "input", input);
	put_key(h, "to", t->guest);
	put_key(h, "chown", t->chown);
	put_num(h, "srcs", t->nsrcs);
	for (size_t i = 0; i < t->nsrcs; i++)
		put_field(h, "src", t->srcs[i]);
}

void template_hash_inputs(const struct cove_template_spec *s, const char *vmm, const char *kernel,
                          const char *image, const char *const *puts, char (*keys)[SHA256_HEX],
                          char hex[SHA256_HEX])
{
	/* Every field is "key length value\n": no two input lists hash the
	 * same text.  Paths are not inputs, contents are.  Each step's key
	 * hashes the key before it, so a change keys every step after it
	 * anew and none before. */
	struct sha256 h;
	uint8_t d[SHA256_LEN];
	char prev[SHA256_HEX];
	sha256_init(&h);
	put_field(&h, "cove-template", "2");
	put_field(&h, "vmm", vmm);
	put_field(&h, "kernel", kernel);
	put_field(&h, "image", image);
	put_num(&h, "cpus", s->cpus);
	put_num(&h, "memory_mib", s->memory_mib);
	put_num(&h, "disk_size", s->disk_size);
	put_num(&h, "net", (uint64_t)s->net);
	sha256_final(&h, d);
	sha256_hex(d, prev);
	size_t k = 0;
	for (size_t i = 0; i < s->nsteps; i++) {
		const struct cove_template_step *t = &s->steps[i];
		bool input = t->kind == COVE_STEP_PUT || t->kind == COVE_STEP_COPY;
		sha256_init(&h);
		put_field(&h, "parent", prev);
		put_step(&h, t, input ? puts[k++] : NULL);
		sha256_final(&h, d);
		sha256_hex(d, prev);
		if (keys)
			memcpy(keys[i], prev, SHA256_HEX);
	}
	sha256_init(&h);
	put_field(&h, "steps", prev);
	put_key(&h, "start", s->start_cmd);
	put_key(&h, "ready", s->ready_cmd);
	put_num(&h, "ready_port", s->ready_port);
	put_num(&h, "ready_timeout", s->ready_timeout_s);
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
