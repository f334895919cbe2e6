/* libFuzzer target: a template's template.json (lib/template_manifest.c).
 * What it accepts has a valid name, 64 hex digits of hash, absolute
 * paths and bounded steps, and dumps to a manifest that parses back the
 * same. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/sha256.h"
#include "lib/template/template_json.h"
#include "lib/template/template_manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cove_template_manifest m, back;
	char err[300];
	if (template_manifest_parse((const char *)data, size, &m, err, sizeof(err)))
		return 0;
	const struct cove_template_spec *s = &m.spec;
	assert(cove_template_name_valid(s->name));
	assert(strlen(m.inputs_hash) == SHA256_HEX - 1);
	assert(s->vmm[0] == '/' && s->kernel[0] == '/' && s->image[0] == '/');
	assert(s->nsteps <= COVE_TEMPLATE_STEPS_MAX);
	for (size_t i = 0; i < s->nsteps; i++)
		assert(s->steps[i].kind == COVE_STEP_RUN
		           ? s->steps[i].run && strlen(s->steps[i].run) <= COVE_TEMPLATE_RUN_MAX
		           : s->steps[i].local[0] == '/' && s->steps[i].guest[0] == '/');
	char *text = template_manifest_dump(&m);
	if (text) {
		int r = template_manifest_parse(text, strlen(text), &back, err, sizeof(err));
		assert(r == 0);
		assert(back.spec.nsteps == s->nsteps && back.spec.cpus == s->cpus &&
		       back.spec.memory_mib == s->memory_mib && !strcmp(back.spec.image, s->image));
		cove_template_manifest_free(&back);
		free(text);
	}
	cove_template_manifest_free(&m);
	return 0;
}
