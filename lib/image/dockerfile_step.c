/* Dockerfile steps: names and freeing (dockerfile_step.h). */
#include "lib/image/dockerfile_step.h"

#include <stdlib.h>

const char *dockerfile_name(enum df_kind kind)
{
	static const char *const names[] = {
		[DF_FROM] = "FROM",     [DF_ARG] = "ARG",     [DF_RUN] = "RUN",
		[DF_COPY] = "COPY",     [DF_ENV] = "ENV",     [DF_WORKDIR] = "WORKDIR",
		[DF_USER] = "USER",     [DF_CMD] = "CMD",     [DF_ENTRYPOINT] = "ENTRYPOINT",
		[DF_EXPOSE] = "EXPOSE", [DF_LABEL] = "LABEL",
	};
	return (unsigned)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

void dockerfile_step_free(struct df_step *s)
{
	free(s->text);
	df_list_free(&s->args);
	df_list_free(&s->copy.srcs);
	free(s->copy.dest);
	free(s->copy.chown_user);
	free(s->copy.chown_group);
	ctx_files_free(&s->copy.files);
}

void dockerfile_free(struct dockerfile *df)
{
	for (size_t i = 0; i < df->nsteps; i++)
		dockerfile_step_free(&df->steps[i]);
	free(df->steps);
	struct df_config *c = &df->config;
	df_list_free(&c->env);
	df_list_free(&c->cmd);
	df_list_free(&c->entrypoint);
	df_list_free(&c->expose);
	df_list_free(&c->labels);
	free(c->workdir);
	free(c->user);
	*df = (struct dockerfile){ 0 };
}
