/* Sandbox sizes: defaults and bounds, one definition for the CLI, libcove
 * and cove-vmm, each of which checks them with the same message. */
#ifndef COVE_LIMITS_H
#define COVE_LIMITS_H

#define COVE_MEMORY_DEFAULT_MIB 256
#define COVE_MEMORY_MIN_MIB     32 /* the guest kernel and agent need this much */
#define COVE_CPUS_DEFAULT       1
#define COVE_CPUS_MAX           64 /* vCPUs of one VM (the MP table, the vCPU array) */

#endif
