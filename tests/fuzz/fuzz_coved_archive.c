/* libFuzzer target: uploaded COPY archives (daemon/sandboxes/build_files.c)
 * as they come off the network: the input is the upload (a tar, maybe
 * compressed), unpacked into a tenant's folder under a scratch state
 * directory, then the targets a mode would be set on.  Refusals are fine;
 * crashes, leaks and anything written outside the scratch directory are
 * not: nothing may be left but the hash's folder (kept on success, never
 * half-made) and the tenant's folder. */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/sandboxes/build_files.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "lib/base/registry.h"

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Stand-ins for the sandbox table's ids and clock (table.c, sandbox.c). */
static unsigned int g_counter;
int coved_new_name(char *out, size_t n)
{
	snprintf(out, n + 1, "%0*u", (int)n, ++g_counter % 100000u);
	return 0;
}
int coved_new_token(char *out)
{
	snprintf(out, COVED_TOKEN_LEN + 1, "%064u", ++g_counter);
	return 0;
}
int64_t coved_now_ms(void)
{
	return 0;
}

static struct coved g_d;
static char g_root[64], g_state[128], g_tenant[200];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	snprintf(g_root, sizeof(g_root), "/tmp/fuzz-coved-archive-XXXXXX");
	if (!mkdtemp(g_root))
		abort();
	snprintf(g_state, sizeof(g_state), "%s/state", g_root);
	snprintf(g_tenant, sizeof(g_tenant), "%s/template-files", g_state);
	if (mkdir(g_state, 0700) < 0 || mkdir(g_tenant, 0700) < 0)
		abort();
	snprintf(g_tenant, sizeof(g_tenant), "%s/template-files/t", g_state);
	if (mkdir(g_tenant, 0700) < 0)
		abort();
	g_d.cfg.state_dir = g_state;
	return 0;
}

/* The entries of dir but "." and "..". */
static int count(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[256], err[512], ctx[4400], words[1024];
	int fd = coved_files_spool(&g_d, "t", path, sizeof(path));
	assert(fd >= 0);
	assert(write(fd, data, size) == (ssize_t)size);
	close(fd);
	int r = coved_files_unpack(&g_d, "t", HASH, path, 1 << 20, err, sizeof(err));
	assert(access(path, F_OK) < 0); /* the spool is used up */
	coved_files_dir(&g_d, "t", HASH, ctx, sizeof(ctx));
	if (r == 0) {
		assert(coved_files_present(&g_d, "t", HASH));
		static const char *const srcs[] = { ".", "a", "a/b", "x/" };
		for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++)
			if (coved_files_mode_targets(ctx, srcs[i], "/d/", words, sizeof(words), err,
			                             sizeof(err)) < 0)
				assert(err[0] && !strchr(err, '\n'));
	} else {
		assert(err[0] && !strchr(err, '\n'));
		assert(!coved_files_present(&g_d, "t", HASH));
	}
	/* Only the hash's folder may be left, in the tenant's; nothing beside. */
	assert(count(g_tenant) == (r == 0));
	assert(count(g_root) == 1);
	(void)registry_remove_tree(ctx);
	return 0;
}
