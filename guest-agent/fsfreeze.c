/* Freeze and thaw of / (fsfreeze.h).  One freeze at a time per guest: its
 * generation tells the self-thaw timer whether the freeze it was started
 * for is still the current one. */
#include "fsfreeze.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define TIMER_STACK (64 * 1024)

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_frozen;
static uint64_t g_generation;

/* FIFREEZE or FITHAW on /; 0 or -errno. */
static int root_ioctl(unsigned long op)
{
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = ioctl(fd, op, 0) < 0 ? -errno : 0;
	close(fd);
	return r;
}

struct timer {
	uint64_t generation;
	uint32_t ms;
};

static void *self_thaw(void *arg)
{
	struct timer t = *(struct timer *)arg;
	free(arg);
	struct timespec ts = { .tv_sec = t.ms / 1000, .tv_nsec = (long)(t.ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
	pthread_mutex_lock(&g_lock);
	if (g_frozen && g_generation == t.generation && root_ioctl(FITHAW) == 0)
		g_frozen = false;
	pthread_mutex_unlock(&g_lock);
	return NULL;
}

static int start_timer(uint64_t generation, uint32_t ms)
{
	struct timer *t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	*t = (struct timer){ .generation = generation, .ms = ms };
	pthread_attr_t a;
	pthread_t th;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, TIMER_STACK);
	int r = pthread_create(&th, &a, self_thaw, t);
	pthread_attr_destroy(&a);
	if (r)
		free(t);
	return -r;
}

int agent_freeze(struct agent_conn *c, uint32_t id, uint32_t timeout_ms)
{
	pthread_mutex_lock(&g_lock);
	if (g_frozen) {
		pthread_mutex_unlock(&g_lock);
		return agent_conn_fail(c, id, EBUSY, "the file system is frozen already");
	}
	sync();
	int r = root_ioctl(FIFREEZE);
	if (r == 0) {
		g_frozen = true;
		r = start_timer(++g_generation, timeout_ms);
		if (r < 0 && root_ioctl(FITHAW) == 0) /* no timer: never left frozen */
			g_frozen = false;
	}
	pthread_mutex_unlock(&g_lock);
	if (r < 0)
		return agent_conn_fail(c, id, -r, "freezing /: %s", strerror(-r));
	return agent_conn_ok(c, id, NULL);
}

int agent_thaw(struct agent_conn *c, uint32_t id)
{
	pthread_mutex_lock(&g_lock);
	bool was = g_frozen;
	int r = root_ioctl(FITHAW);
	if (r == -EINVAL)
		r = 0; /* not frozen (thawed by someone else) */
	if (r == 0)
		g_frozen = false;
	pthread_mutex_unlock(&g_lock);
	if (r < 0)
		return agent_conn_fail(c, id, -r, "thawing /: %s", strerror(-r));
	json_t *o = json_pack("{s:b}", "was_frozen", (int)was);
	return o ? agent_conn_ok(c, id, o) : agent_conn_fail(c, id, ENOMEM, "out of memory");
}
