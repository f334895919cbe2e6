/* Small files the agent writes in the guest (resolv.conf, the CA bundle). */
#ifndef COVE_AGENT_FILE_H
#define COVE_AGENT_FILE_H

#include <stddef.h>

/* Writes the n @parts into @path (mode 0644) through a temporary file
 * beside it and a rename, so a reader sees the old file or the whole new
 * one.  0 or -errno (the temporary file removed). */
int agent_write_file(const char *path, const char *const *parts, const size_t *lens, int n)
    __attribute__((warn_unused_result));

#endif
