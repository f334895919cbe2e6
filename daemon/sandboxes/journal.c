/* coved's journal: one JSON line per event, per sandbox, in
 * <state_dir>/journal/<id>.jsonl (0600, appended with one write each). */
#include "daemon/sandboxes/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"

char *coved_journal_path(const struct coved *d, const char *id)
{
	char *p = NULL;
	if (asprintf(&p, "%s/journal/%s.jsonl", d->cfg.state_dir, id) < 0)
		return NULL;
	return p;
}

void coved_journal(struct coved_sb *sb, json_t *ev)
{
	if (!sb || !json_is_object(ev)) {
		json_decref(ev);
		return;
	}
	char ts[48];
	clock_rfc3339(wall_ms(), ts, sizeof(ts));
	json_object_set_new(ev, "ts", json_string(ts));
	json_object_set_new(ev, "sandbox", json_string(sb->id));
	char *line = json_dumps(ev, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(ev);
	char *path = coved_journal_path(sb->d, sb->id);
	if (!line || !path) {
		free(line);
		free(path);
		return;
	}
	size_t n = strlen(line);
	line[n] = '\n'; /* json_dumps' NUL becomes the newline */
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		/* O_APPEND: one write lands whole even with several writers. */
		if (write(fd, line, n + 1) != (ssize_t)(n + 1))
			fprintf(stderr, "coved: journal %s: short write\n", path);
		close(fd);
	} else {
		fprintf(stderr, "coved: journal %s: %s\n", path, strerror(errno));
	}
	free(line);
	free(path);
}

void coved_journal_event(struct coved_sb *sb, const char *type, json_t *extra)
{
	json_t *ev = json_is_object(extra) ? extra : json_object();
	if (extra && !json_is_object(extra))
		json_decref(extra);
	json_object_set_new(ev, "type", json_string("lifecycle"));
	json_object_set_new(ev, "event", json_string(type));
	coved_journal(sb, ev);
}
