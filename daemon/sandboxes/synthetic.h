/* A test mode: sandbox records with no VM behind them, so the console's
 * list can be measured with thousands of sandboxes on a machine that
 * cannot run them (tests/integration/test_console.sh).  Only when the
 * environment asks for it (COVED_TEST_SYNTHETIC_SANDBOXES=N); coved says
 * so loudly at start.  They are paused, never written to the state
 * directory, and end a day after start. */
#ifndef COVED_SANDBOXES_SYNTHETIC_H
#define COVED_SANDBOXES_SYNTHETIC_H

#include <stddef.h>

struct coved;

#define COVED_SYNTHETIC_MAX 100000

/* coved_synthetic_parse() - N of "N" (1 to COVED_SYNTHETIC_MAX): 0 and
 * *n, or -EINVAL with a line in err. */
int coved_synthetic_parse(const char *text, size_t *n, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* coved_synthetic_add() - adds n synthetic sandboxes of tenant (its name;
 * NULL: the keys file's first tenant) to d's list.  Call after
 * coved_tenants_init() and before coved_serve().  0 or -errno. */
int coved_synthetic_add(struct coved *d, size_t n, const char *tenant, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
