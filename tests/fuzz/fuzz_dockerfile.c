/* libFuzzer target: Dockerfiles (lib/image/dockerfile.c and its words).
 * What parses starts with FROM, has lines in order, absolute WORKDIRs and
 * COPY destinations, sources that stay in the context, and keys (without
 * a context when there is no COPY); what fails says one line that starts
 * "Dockerfile". */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/image/dockerfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct dockerfile *df)
{
	bool copy = false;
	if (!df->nsteps || df->steps[0].kind != DF_FROM || !df->steps[0].args.v[0][0])
		abort();
	for (size_t i = 0; i < df->nsteps; i++) {
		const struct df_step *s = &df->steps[i];
		if (!s->text || !s->line || (i && s->line <= df->steps[i - 1].line))
			abort();
		if (i && s->kind == DF_FROM)
			abort();
		if (s->kind == DF_WORKDIR && s->args.v[0][0] != '/')
			abort();
		if (s->kind != DF_COPY)
			continue;
		copy = true;
		if (s->copy.dest[0] != '/' || s->copy.srcs.n < 1)
			abort();
		for (size_t k = 0; k < s->copy.srcs.n; k++) {
			const char *p = s->copy.srcs.v[k];
			if (p[0] == '/' || !strcmp(p, "..") || !strncmp(p, "../", 3) ||
			    strstr(p, "/../") ||
			    (strlen(p) >= 3 && !strcmp(p + strlen(p) - 3, "/..")))
				abort();
		}
	}
	if (df->config.workdir && df->config.workdir[0] != '/')
		abort();
	if (!copy) {
		char err[600];
		struct dockerfile *d = (struct dockerfile *)df;
		if (dockerfile_resolve(d, NULL, "sha256:x", err, sizeof(err)))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const args[] = { "A=built", "V=1.0", "EMPTY=" };
	struct dockerfile df;
	char err[600];
	int r = dockerfile_parse((const char *)data, size, args, 3, &df, err, sizeof(err));
	if (r) {
		if (strncmp(err, "Dockerfile", 10) || strchr(err, '\n'))
			abort();
	} else {
		check(&df);
	}
	dockerfile_free(&df);
	return 0;
}
