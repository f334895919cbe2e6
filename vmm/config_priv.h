/* The values of cove-vmm's options, shared by its flags (config_flags.c)
 * and its JSON file (config.c), which both fill struct vmm_config the same
 * way.  Private to vmm/'s configuration. */
#ifndef COVE_VMM_CONFIG_PRIV_H
#define COVE_VMM_CONFIG_PRIV_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "errf.h"

#define bad(err, errlen, ...) errf(err, errlen, -EINVAL, __VA_ARGS__)

/* The most a limit may be: far above any real disk, far below overflow. */
#define LIMIT_MAX (1ULL << 62)

/* A decimal number up to max (no sign, no junk): 0, or -EINVAL. */
int cfg_parse_uint(const char *s, unsigned long long max, unsigned long long *out);

/* The console: "stdio", "none" or a file path. */
int cfg_set_console(struct vm_config *vm, const char *v, char *err, size_t errlen);

/* One "key=N" disk limit option; 1 when opt was one, 0 when not, -EINVAL. */
int cfg_limit_option(struct vmm_disk_limits *l, const char *opt, char *err, size_t errlen);

/* Appends a disk to vm (at most VM_MAX_DISKS). */
int cfg_add_disk(struct vm_config *vm, const char *path, int read_only, const char *id,
                 const char *format, const struct vmm_disk_limits *l, char *err, size_t errlen);

/* The --net limit field named by key[0..keylen), or NULL. */
uint64_t *cfg_net_limit(struct vm_net_config *n, const char *key, size_t keylen);

/* The NIC's fd=, mac= and tap= values. */
int cfg_net_fd_value(struct vm_net_config *n, unsigned long long v, char *err, size_t errlen);
int cfg_net_mac_value(struct vm_net_config *n, const char *v, char *err, size_t errlen);
int cfg_net_tap_value(struct vm_net_config *n, const char *v, char *err, size_t errlen);

#endif
