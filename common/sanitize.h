/* Sanitizer builds (make sanitize: ASan, UBSan and LeakSanitizer with
 * -DCOVE_SANITIZE, in build/san) report to files the integration suite
 * collects, and every report is fatal.  In other builds these are no-ops.
 *
 * Why files: cove-vmm's stderr is the sandbox's vmm.log, removed when the
 * sandbox stops, and a jailed cove-vmm (pivot_root, no environment: libcove
 * starts it with none) can open no path when LeakSanitizer reports at
 * exit.  So cove-vmm opens its report file before the jail and hands the
 * runtime the descriptor. */
#ifndef COVE_SANITIZE_H
#define COVE_SANITIZE_H

/* Where reports go: $COVE_SAN_DIR, else this directory. */
#define SAN_DIR_DEFAULT "/tmp/cove-san"

/* True in a COVE_SANITIZE build. */
#ifdef COVE_SANITIZE
#define SAN_BUILD 1
#else
#define SAN_BUILD 0
#endif

/* Remembers $COVE_SAN_DIR; call before the environment is cleared. */
void san_note_env(void);

/* Opens <dir>/<who>.XXXXXX (mode 0644, close-on-exec, kept open for the
 * rest of the process) and sends every sanitizer report there.  Call
 * after the inherited descriptors were closed and before any jail; a
 * failure leaves the reports on stderr and says so there once. */
void san_report_to_file(const char *who);

#endif
