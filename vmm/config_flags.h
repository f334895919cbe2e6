/* cove-vmm's command line (its JSON file is config.h's). */
#ifndef COVE_VMM_CONFIG_FLAGS_H
#define COVE_VMM_CONFIG_FLAGS_H

#include <stddef.h>

#include "config.h"

/* Parses argv.  Flags and --config may be mixed; later ones override
 * earlier ones, and every --disk adds a disk.  Returns 0, or -EINVAL with
 * a one-line message in err. */
int vmm_config_parse(struct vmm_config *c, int argc, char **argv, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
