/* The sandbox CA in the guest (issue 15, PROTO_CA): cove-egress's
 * per-sandbox CA certificate (public part only), given by the host at boot
 * and after every restore or fork (each fork has its own CA).  It is
 * appended to the system bundle where one exists (replacing the block a
 * previous CA left there), written alone to /run/cove/ca.pem and with the
 * system's certificates to /run/cove/ca-bundle.crt, and new execs get
 * SSL_CERT_FILE, REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO (the bundle) and
 * NODE_EXTRA_CA_CERTS (the CA alone), plus the rules' dummy env_vars. */
#ifndef COVE_AGENT_CA_H
#define COVE_AGENT_CA_H

#include <stdbool.h>
#include <stddef.h>

#define AGENT_CA_FILE    "/run/cove/ca.pem"
#define AGENT_CA_BUNDLE  "/run/cove/ca-bundle.crt"
#define AGENT_CA_SYSTEM  "/etc/ssl/certs/ca-certificates.crt"
#define AGENT_CA_PEM_MAX 16384
#define AGENT_CA_ENV_MAX 64
#define AGENT_CA_BEGIN   "# cove sandbox CA: begin\n"
#define AGENT_CA_END     "# cove sandbox CA: end\n"

#include <jansson.h>

/* agent_ca_apply() - PROTO_CA's payload @o checked and installed;
 * *@bundle: the system bundle was updated.  0 or -errno with @err. */
int agent_ca_apply(const json_t *o, bool *bundle, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* agent_ca_install() - the steps, with the system bundle's path open for
 * tests: @pem must be one PEM certificate; @env "NAME=value" strings.
 * *@bundle: whether @system was updated.  0 or -errno with @err. */
int agent_ca_install(const char *pem, const char *const *env, size_t nenv, const char *system,
                     const char *run_dir, bool *bundle, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* agent_ca_strip() - @text (@len) without the block a previous CA left
 * (AGENT_CA_BEGIN .. AGENT_CA_END); the new length (in place). */
size_t agent_ca_strip(char *text, size_t len);

/* agent_ca_env() - a copy of the variables for new execs (NULL-terminated,
 * NULL when there are none); free with agent_ca_env_free.  Thread-safe. */
char **agent_ca_env(void);
void agent_ca_env_free(char **env);

#endif
