/* PID 1 grows the root file system to its disk (grow.c). */
#ifndef COVE_AGENT_GROW_H
#define COVE_AGENT_GROW_H

/* When / is ext4 on a block device larger than the file system (a sandbox
 * given --disk-size), grows it online to the whole device
 * (EXT4_IOC_RESIZE_FS) and says so in one console line.  Needs /sys and
 * /dev mounted; anything else (another file system, no room) does
 * nothing. */
void agent_grow_root(void);

#endif
