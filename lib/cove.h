/* libcove: the host-side C API for embedding Cove sandboxes.
 *
 * A sandbox is one cove-vmm child process running a microVM whose PID 1 is
 * cove-agent.  Typical use:
 *
 *   struct cove_config cfg;
 *   cove_config_defaults(&cfg);           // kernel, image, vmm found beside libcove's binary
 *   cfg.memory_mib = 512;
 *   struct cove_sandbox *sb;
 *   if (cove_start(&cfg, &sb, err, sizeof(err)) < 0) ...   // returns once the agent answered
 *   struct cove_exec_result res;
 *   cove_exec(sb, &opts, &res);           // output through callbacks
 *   cove_put_file(sb, "local.txt", "/root/x.txt", 0644);
 *   cove_stop(sb);                        // guest shuts down, VMM reaped, files removed
 *   cove_free(sb);
 *
 * All functions return 0 or a negative errno; those taking err/errlen also
 * leave a one-line message there.  A sandbox may be used from several
 * threads at once (each call opens its own agent connection). */
#ifndef COVE_H
#define COVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cove_config {
	const char *vmm;              /* cove-vmm binary */
	const char *kernel;           /* guest kernel (vmlinux or bzImage) */
	const char *image;            /* root file system image (ext4); copied per sandbox */
	unsigned int cpus;            /* default 1 */
	uint64_t memory_mib;          /* default 256 */
	const char *cmdline;          /* extra kernel command line, or NULL */
	const char *hostname;         /* guest hostname, or NULL for "cove" */
	const char *console_log;      /* where the guest console goes; NULL: the sandbox dir */
	unsigned int boot_timeout_ms; /* until the agent answers; default 60000 */
};

/* Fills cfg with defaults: cove-vmm, build/vmlinux and
 * build/images/minimal.ext4 found relative to the running executable
 * (build/bin/X -> build/...), overridable with $COVE_VMM, $COVE_KERNEL,
 * $COVE_IMAGE. */
void cove_config_defaults(struct cove_config *cfg);

/* Resolves an image name: "minimal", "debian" (build/images/NAME.ext4
 * beside the executable, or $COVE_IMAGES/NAME.ext4) or a path.  Returns a
 * malloc'ed path or NULL. */
char *cove_image_path(const char *name_or_path);

struct cove_sandbox;

/* Boots a sandbox and waits until its agent announces itself (no sleeps:
 * the agent connects to the host).  Fails with a message naming the
 * problem: no /dev/kvm, a missing kernel or image, cove-vmm exiting early
 * (its last console lines), or the boot timeout. */
int cove_start(const struct cove_config *cfg, struct cove_sandbox **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The sandbox's runtime directory and cove-vmm's pid. */
const char *cove_sandbox_dir(const struct cove_sandbox *sb);
pid_t cove_vmm_pid(const struct cove_sandbox *sb);

/* Output of an execution arrives through these, on the calling thread. */
typedef void (*cove_output_fn)(void *opaque, const void *data, size_t len);

struct cove_exec_opts {
	const char *const *argv; /* NULL-terminated, required */
	const char *const *env;  /* "K=V" strings, NULL-terminated, or NULL */
	const char *cwd;         /* NULL: the agent's default */
	uint32_t uid, gid;
	uint32_t timeout_ms; /* 0: none; on expiry the process group is killed */
	bool pty;            /* run under a pseudo-terminal */
	uint16_t rows, cols; /* PTY window size */
	int stdin_fd;        /* forwarded until EOF; -1: no input */
	cove_output_fn on_stdout, on_stderr;
	void *opaque;
	/* PTY mode: polled after every wake-up; return true and fill rows/cols
	 * to send a window size change.  May be NULL. */
	bool (*resize)(void *opaque, uint16_t *rows, uint16_t *cols);
	/* Set by a signal handler to forward a signal to the process group. */
	volatile int *pending_signal;
};

struct cove_exec_result {
	int exit_code; /* valid when signal == 0 */
	int signal;    /* the signal that killed it, or 0 */
	bool timed_out;
};

int cove_exec(struct cove_sandbox *sb, const struct cove_exec_opts *opts,
              struct cove_exec_result *res, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Streams a local file into the guest (atomically replaced there). */
int cove_put_file(struct cove_sandbox *sb, const char *local, const char *guest, uint32_t mode,
                  char *err, size_t errlen) __attribute__((warn_unused_result));
/* Streams a guest file to a local path (written to a temporary name and
 * renamed, so a failure leaves nothing half-written). */
int cove_get_file(struct cove_sandbox *sb, const char *guest, const char *local, char *err,
                  size_t errlen) __attribute__((warn_unused_result));

/* Round trip to the agent. */
int cove_ping(struct cove_sandbox *sb, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Asks the guest to shut down, waits for cove-vmm to exit (killing it
 * after a grace period) and removes the runtime directory. */
int cove_stop(struct cove_sandbox *sb);

/* Frees the handle; stops the sandbox first if it still runs. */
void cove_free(struct cove_sandbox *sb);

#endif
