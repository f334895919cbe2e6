/* Unit tests: the sandbox registry (lib/registry.c): names, meta.json round
 * trip and malformed files, /proc/PID/stat parsing, liveness of recorded
 * processes (gone, zombie, reused pid), cove_list's clean-up of dead
 * entries, cove_open's answers, and the control-socket client (cove_list's
 * paused state, cove_snapshot) against a fake cove-vmm. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cove.h"
#include "lib/base/registry.h"
#include "unit.h"

/* A fresh runtime base for the test, exported as $COVE_RUNTIME_DIR. */
static char base[64];

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/cove-ut-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	setenv("COVE_RUNTIME_DIR", base, 1);
}

static void teardown(void)
{
	registry_remove_tree(base);
	unsetenv("COVE_RUNTIME_DIR");
}

static bool exists(const char *name)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", base, name);
	return access(p, F_OK) == 0;
}

/* A pid that existed and is gone: a child, exited and reaped. */
static pid_t gone_pid(void)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	return pid;
}

/* Creates <base>/<name> with a record for pid started at start. */
static void make_entry(const char *name, pid_t pid, uint64_t start, bool starting)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/%s", base, name);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	struct registry_meta *m = calloc(1, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->pid = pid;
	m->pid_start = start;
	m->starting = starting;
	m->cpus = 2;
	m->memory_mib = 512;
	m->created = (int64_t)time(NULL) - 90;
	snprintf(m->image, sizeof(m->image), "/images/minimal.ext4");
	ck_assert_int_eq(registry_meta_write(dir, m), 0);
	free(m);
}

/* This process stands in for cove-vmm: cove_open checks the comm. */
static char saved_comm[17];
static void as_vmm(bool on)
{
	if (on) {
		ck_assert_int_eq(prctl(PR_GET_NAME, saved_comm), 0);
		ck_assert_int_eq(prctl(PR_SET_NAME, REGISTRY_VMM_COMM), 0);
	} else {
		ck_assert_int_eq(prctl(PR_SET_NAME, saved_comm), 0);
	}
}

static uint64_t self_start(void)
{
	uint64_t start = 0;
	ck_assert_int_eq(registry_proc_start(getpid(), &start), 0);
	return start;
}

START_TEST(names)
{
	static const char *good[] = { "a",         "web-1", "A.b_c-9",
		                      "sb-x1Y2z3", "9",     "abcdefghijklmnopqrstuvwxyz012345" };
	static const char *bad[] = { "",
		                     ".",
		                     "..",
		                     ".hidden",
		                     "a/b",
		                     "a b",
		                     "a:b",
		                     "caf\xc3\xa9",
		                     "a\n",
		                     "tab\t",
		                     "abcdefghijklmnopqrstuvwxyz0123456" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(registry_name_valid(good[i]), "'%s' should be valid", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!registry_name_valid(bad[i]), "'%s' should be invalid", bad[i]);
	ck_assert(!registry_name_valid(NULL));
	ck_assert(cove_name_valid("web-1"));
	ck_assert(!cove_name_valid("a/"));
}
END_TEST

START_TEST(meta_round_trip)
{
	struct registry_meta *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	snprintf(a->name, sizeof(a->name), "box_1");
	a->pid = 4242;
	a->pid_start = 123456789012ULL;
	a->starting = false;
	a->cpus = 4;
	a->memory_mib = 1ULL << 20;
	a->created = 1700000000;
	snprintf(a->image, sizeof(a->image), "/x/\"quoted\" image.ext4");
	ck_assert_int_eq(registry_meta_write(base, a), 0);
	ck_assert_int_eq(registry_meta_read(base, b), 0);
	ck_assert_str_eq(b->name, "box_1");
	ck_assert_int_eq(b->pid, 4242);
	ck_assert_uint_eq(b->pid_start, 123456789012ULL);
	ck_assert(!b->starting);
	ck_assert_uint_eq(b->cpus, 4);
	ck_assert_uint_eq(b->memory_mib, 1ULL << 20);
	ck_assert_int_eq(b->created, 1700000000);
	ck_assert_str_eq(b->image, a->image);
	ck_assert_str_eq(b->restored_from, "");

	/* Restored, starting: the other source field, replaced in place. */
	a->image[0] = 0;
	snprintf(a->restored_from, sizeof(a->restored_from), "/snaps/one");
	a->starting = true;
	ck_assert_int_eq(registry_meta_write(base, a), 0);
	ck_assert_int_eq(registry_meta_read(base, b), 0);
	ck_assert(b->starting);
	ck_assert_str_eq(b->image, "");
	ck_assert_str_eq(b->restored_from, "/snaps/one");
	/* No temporary file is left beside it. */
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/.meta.json.tmp", base);
	ck_assert_int_ne(access(tmp, F_OK), 0);
	free(a);
	free(b);
}
END_TEST

static int read_text(const char *text, struct registry_meta *m)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", base, REGISTRY_META);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return registry_meta_read(base, m);
}

START_TEST(meta_malformed)
{
	struct registry_meta *m = calloc(1, sizeof(*m));
	ck_assert_int_eq(registry_meta_read(base, m), -ENOENT);
	static const char *bad[] = {
		"",
		"not json",
		"[1]",
		"{\"version\":2,\"name\":\"a\",\"pid\":1}",
		"{\"version\":1,\"name\":\".a\",\"pid\":1}",
		"{\"version\":1,\"name\":\"a\",\"pid\":0}",
		"{\"version\":1,\"name\":\"a\",\"pid\":-5}",
		"{\"version\":1,\"name\":\"a\",\"pid\":\"7\"}",
		"{\"version\":1,\"name\":\"a\",\"pid\":7,\"starting\":1}",
		"{\"version\":1,\"name\":\"a\",\"pid\":7,\"image\":3}",
		"{\"version\":1,\"name\":\"a\",\"name\":\"b\",\"pid\":7}",
		"{\"version\":1,\"name\":\"a\",\"pid\":7,\"cpus\":100000}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(read_text(bad[i], m) == -EPROTO, "accepted: %s", bad[i]);
	/* Unknown keys are a later version's additions: ignored. */
	ck_assert_int_eq(read_text("{\"version\":1,\"name\":\"a\",\"pid\":7,\"x\":[]}", m), 0);
	ck_assert_int_eq(m->pid, 7);
	free(m);
}
END_TEST

START_TEST(parse_stat)
{
	/* A command name with spaces and parentheses, as a process may pick. */
	const char *text = "4242 (a) b (c) R 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 "
	                   "1 0 987654321 1000000 100 18446744073709551615\n";
	char state = 0;
	uint64_t start = 0;
	ck_assert_int_eq(registry_parse_stat(text, &state, &start), 0);
	ck_assert_int_eq(state, 'R');
	ck_assert_uint_eq(start, 987654321ULL);
	ck_assert_int_eq(registry_parse_stat("4242 (x) S 1 2 3", &state, &start), -EPROTO);
	ck_assert_int_eq(registry_parse_stat("no parenthesis at all", &state, &start), -EPROTO);
	ck_assert_int_eq(registry_parse_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12x 1",
	                                     &state, &start),
	                 -EPROTO);
}
END_TEST

START_TEST(liveness)
{
	struct registry_meta *m = calloc(1, sizeof(*m));
	m->pid = getpid();
	m->pid_start = self_start();
	ck_assert(registry_alive(m));
	/* The same pid with another start time: a reused pid. */
	m->pid_start++;
	ck_assert(!registry_alive(m));
	/* A pid that does not exist. */
	m->pid = gone_pid();
	uint64_t start;
	ck_assert_int_eq(registry_proc_start(m->pid, &start), -ESRCH);
	ck_assert(!registry_alive(m));
	ck_assert_int_eq(registry_proc_start(0, &start), -ESRCH);
	ck_assert_int_eq(registry_proc_start(-1, &start), -ESRCH);
	/* A zombie is dead too: it exited, nobody reaped it yet. */
	pid_t z = fork();
	ck_assert_int_ge(z, 0);
	if (z == 0)
		_exit(0);
	siginfo_t si;
	ck_assert_int_eq(waitid(P_PID, z, &si, WEXITED | WNOWAIT), 0);
	char stat_path[64];
	snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", (int)z);
	ck_assert_int_eq(access(stat_path, F_OK), 0); /* still there, as a zombie */
	ck_assert_int_eq(registry_proc_start(z, &start), -ESRCH);
	m->pid = z;
	ck_assert(!registry_alive(m));
	ck_assert_int_eq(waitpid(z, NULL, 0), z);
	free(m);
}
END_TEST

START_TEST(list_cleans_dead)
{
	uint64_t me = self_start();
	make_entry("live", getpid(), me, false);
	make_entry("gone", gone_pid(), 1, false);
	make_entry("reused", getpid(), me + 1, false);
	make_entry("booting", getpid(), me, true);
	char young[PATH_MAX];
	snprintf(young, sizeof(young), "%s/young", base);
	ck_assert_int_eq(mkdir(young, 0700), 0); /* mkdir'd, meta.json not yet written */
	char stray[PATH_MAX];
	snprintf(stray, sizeof(stray), "%s/stray", base);
	close(open(stray, O_CREAT | O_WRONLY, 0600));

	struct cove_info *list;
	size_t n;
	char err[256];
	ck_assert_int_eq(cove_list(&list, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 5);
	/* Sorted by name. */
	ck_assert_str_eq(list[0].name, "booting");
	ck_assert_str_eq(list[1].name, "gone");
	ck_assert_str_eq(list[2].name, "live");
	ck_assert_str_eq(list[3].name, "reused");
	ck_assert_str_eq(list[4].name, "young");
	ck_assert_int_eq(list[0].state, COVE_STATE_STARTING);
	ck_assert_int_eq(list[1].state, COVE_STATE_DEAD);
	ck_assert_int_eq(list[2].state, COVE_STATE_RUNNING);
	ck_assert_int_eq(list[3].state, COVE_STATE_DEAD);
	ck_assert_int_eq(list[4].state, COVE_STATE_STARTING);
	ck_assert_int_eq(list[2].pid, getpid());
	ck_assert_uint_eq(list[2].cpus, 2);
	ck_assert_uint_eq(list[2].memory_mib, 512);
	ck_assert_str_eq(list[2].image, "/images/minimal.ext4");
	ck_assert_ptr_null(list[2].restored_from);
	ck_assert_int_gt(list[2].created, 0);
	ck_assert_str_eq(cove_state_name(list[1].state), "dead");
	cove_list_free(list, n);
	ck_assert(!exists("gone"));
	ck_assert(!exists("reused"));
	ck_assert(exists("live") && exists("booting") && exists("young") && exists("stray"));

	/* Dead entries are reported once. */
	ck_assert_int_eq(cove_list(&list, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 3);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_ne(list[i].state, COVE_STATE_DEAD);
	cove_list_free(list, n);
}
END_TEST

START_TEST(remove_dead_puts_back_a_new_entry)
{
	make_entry("name", getpid(), self_start(), false);
	struct registry_meta *seen = calloc(1, sizeof(*seen));
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/name", base);
	ck_assert_int_eq(registry_meta_read(dir, seen), 0);
	/* The record looked at was another one (an older sandbox's). */
	seen->created--;
	ck_assert_int_eq(registry_remove_dead(base, "name", seen), -EBUSY);
	ck_assert(exists("name"));
	seen->created++;
	ck_assert_int_eq(registry_remove_dead(base, "name", seen), 0);
	ck_assert(!exists("name"));
	/* Gone already: nothing to do. */
	ck_assert_int_eq(registry_remove_dead(base, "name", seen), 0);
	free(seen);
}
END_TEST

START_TEST(open_answers)
{
	char err[256];
	struct cove_sandbox *sb = NULL;
	ck_assert_int_eq(cove_open("nope", &sb, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_null(sb);
	ck_assert(strstr(err, "nope") != NULL);
	ck_assert_int_eq(cove_open("../etc", &sb, err, sizeof(err)), -EINVAL);

	make_entry("dead", gone_pid(), 1, false);
	ck_assert_int_eq(cove_open("dead", &sb, err, sizeof(err)), -ESRCH);
	ck_assert(!exists("dead"));

	make_entry("booting", getpid(), self_start(), true);
	ck_assert_int_eq(cove_open("booting", &sb, err, sizeof(err)), -EAGAIN);
	ck_assert(exists("booting"));

	/* A live record (this process stands in for cove-vmm): attached, and
	 * cove_free only lets go of it. */
	make_entry("live", getpid(), self_start(), false);
	/* Not a cove-vmm (our comm): never attached to, never removed. */
	ck_assert_int_eq(cove_open("live", &sb, err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "not a cove-vmm"));
	ck_assert(exists("live"));
	as_vmm(true);
	ck_assert_int_eq(cove_open("live", &sb, err, sizeof(err)), 0);
	as_vmm(false);
	ck_assert_int_eq(cove_vmm_pid(sb), getpid());
	ck_assert_str_eq(cove_sandbox_name(sb), "live");
	char want[PATH_MAX];
	snprintf(want, sizeof(want), "%s/live", base);
	ck_assert_str_eq(cove_sandbox_dir(sb), want);
	cove_free(sb);
	ck_assert(exists("live"));
}
END_TEST

/* A fake cove-vmm control socket: answers `conns` connections, one request
 * each: status -> paused; snapshot -> creates the directory and says ok,
 * or fails when the directory's name holds "fail". */
struct fake_vmm {
	int lfd, conns;
	char last_then[16];
};

static void *fake_vmm_serve(void *arg)
{
	struct fake_vmm *f = arg;
	for (int i = 0; i < f->conns; i++) {
		int c = accept(f->lfd, NULL, NULL);
		if (c < 0)
			break;
		char line[4096];
		size_t got = 0;
		while (got < sizeof(line) - 1) {
			ssize_t n = read(c, line + got, 1);
			if (n <= 0 || line[got] == '\n')
				break;
			got++;
		}
		line[got] = 0;
		json_t *req = json_loads(line, 0, NULL);
		const char *op = json_string_value(json_object_get(req, "op"));
		const char *dir = json_string_value(json_object_get(req, "dir"));
		const char *then = json_string_value(json_object_get(req, "then"));
		const char *reply = "{\"ok\":false,\"error\":\"unknown op\"}\n";
		if (op && !strcmp(op, "status")) {
			reply = "{\"ok\":true,\"state\":\"paused\"}\n";
		} else if (op && !strcmp(op, "snapshot") && dir && dir[0] == '/' && then) {
			snprintf(f->last_then, sizeof(f->last_then), "%s", then);
			if (strstr(dir, "fail")) {
				reply = "{\"ok\":false,\"error\":\"disk full\"}\n";
			} else {
				mkdir(dir, 0700);
				reply =
				    "{\"ok\":true,\"memory_bytes\":1,\"state_bytes\":2,\"ms\":3}\n";
			}
		}
		ck_assert_int_eq(write(c, reply, strlen(reply)), (ssize_t)strlen(reply));
		json_decref(req);
		close(c);
	}
	return NULL;
}

static void fake_vmm_start(struct fake_vmm *f, pthread_t *t, const char *name, int conns)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char root[PATH_MAX];
	snprintf(root, sizeof(root), "%s/%s/root", base, name);
	ck_assert(mkdir(root, 0700) == 0 || errno == EEXIST);
	ck_assert_int_lt(snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/api.sock", root),
	                 (int)sizeof(sa.sun_path));
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(f->lfd, 0);
	ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(f->lfd, 4), 0);
	f->conns = conns;
	ck_assert_int_eq(pthread_create(t, NULL, fake_vmm_serve, f), 0);
}

START_TEST(list_asks_the_vmm)
{
	make_entry("p", getpid(), self_start(), false);
	struct fake_vmm f = { .lfd = -1 };
	pthread_t t;
	fake_vmm_start(&f, &t, "p", 1);
	struct cove_info *list;
	size_t n;
	char err[256];
	ck_assert_int_eq(cove_list(&list, &n, err, sizeof(err)), 0);
	pthread_join(t, NULL);
	close(f.lfd);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(list[0].state, COVE_STATE_PAUSED);
	cove_list_free(list, n);
}
END_TEST

START_TEST(snapshot_client)
{
	make_entry("s", getpid(), self_start(), false);
	struct fake_vmm f = { .lfd = -1 };
	pthread_t t;
	fake_vmm_start(&f, &t, "s", 2);
	struct cove_sandbox *sb;
	char err[256], dir[PATH_MAX], note[PATH_MAX + 32];
	as_vmm(true);
	ck_assert_int_eq(cove_open("s", &sb, err, sizeof(err)), 0);
	as_vmm(false);
	/* A relative path is made absolute; the note for cove ls is left. */
	ck_assert_int_eq(chdir(base), 0);
	ck_assert_int_eq(cove_snapshot(sb, "snap-a/", false, err, sizeof(err)), 0);
	ck_assert_str_eq(f.last_then, "resume");
	snprintf(dir, sizeof(dir), "%s/snap-a", base);
	snprintf(note, sizeof(note), "%s/cove-sandbox.json", dir);
	json_t *o = json_load_file(note, 0, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "cpus")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "memory_mib")), 512);
	json_decref(o);
	/* An existing directory is refused before the VMM is asked. */
	ck_assert_int_eq(cove_snapshot(sb, dir, false, err, sizeof(err)), -EEXIST);
	ck_assert(strstr(err, "already exists") != NULL);
	ck_assert_int_eq(cove_snapshot(sb, "/no/such/parent/x", false, err, sizeof(err)), -ENOENT);
	/* The VMM's error arrives as one line. */
	ck_assert_int_eq(cove_snapshot(sb, "snap-fail", true, err, sizeof(err)), -EIO);
	ck_assert_str_eq(err, "cove-vmm: disk full");
	ck_assert_str_eq(f.last_then, "stop");
	ck_assert_int_lt(access("snap-fail", F_OK), 0); /* a failed snapshot leaves nothing */
	pthread_join(t, NULL);
	close(f.lfd);
	/* Nobody listens any more. */
	ck_assert_int_lt(cove_snapshot(sb, "snap-b", false, err, sizeof(err)), 0);
	ck_assert(strstr(err, "control socket") != NULL);
	cove_free(sb);
	ck_assert(exists("s"));
}
END_TEST

START_TEST(base_too_long)
{
	char longdir[128];
	memset(longdir, 'x', sizeof(longdir) - 1);
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = 0;
	setenv("COVE_RUNTIME_DIR", longdir, 1);
	char out[PATH_MAX];
	ck_assert_int_eq(registry_base(out, sizeof(out), NULL, 0), -ENAMETOOLONG);
	struct cove_info *list;
	size_t n;
	char err[256];
	ck_assert_int_eq(cove_list(&list, &n, err, sizeof(err)), -ENAMETOOLONG);
	setenv("COVE_RUNTIME_DIR", base, 1);
	ck_assert_int_eq(registry_base(out, sizeof(out), NULL, 0), 0);
	ck_assert_str_eq(out, base);
}
END_TEST

START_TEST(base_must_be_ours)
{
	char out[PATH_MAX], err[512], p[PATH_MAX];
	/* Open to others: refused, naming the path, owner and mode. */
	snprintf(p, sizeof(p), "%s/open", base);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	ck_assert_int_eq(chmod(p, 0755), 0);
	setenv("COVE_RUNTIME_DIR", p, 1);
	ck_assert_int_eq(registry_base(out, sizeof(out), err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, p));
	ck_assert_ptr_nonnull(strstr(err, "mode 0755"));
	ck_assert_ptr_null(strchr(err, '\n'));
	/* A symlink to a directory of ours: refused too (lstat). */
	char l[PATH_MAX];
	snprintf(l, sizeof(l), "%s/link", base);
	ck_assert_int_eq(symlink(base, l), 0);
	setenv("COVE_RUNTIME_DIR", l, 1);
	ck_assert_int_eq(registry_base(out, sizeof(out), err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "symbolic link"));
	struct cove_info *list;
	size_t n;
	ck_assert_int_eq(cove_list(&list, &n, err, sizeof(err)), -EPERM);
	/* A fresh one is made 0700 and accepted. */
	snprintf(p, sizeof(p), "%s/fresh", base);
	setenv("COVE_RUNTIME_DIR", p, 1);
	ck_assert_int_eq(registry_base(out, sizeof(out), err, sizeof(err)), 0);
	struct stat st;
	ck_assert_int_eq(lstat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	setenv("COVE_RUNTIME_DIR", base, 1);
}
END_TEST

START_TEST(parse_status)
{
	char name[32];
	uid_t euid = 0;
	ck_assert_int_eq(registry_parse_status("Name:\tcove-vmm\nUmask:\t0022\nState:\tS\n"
	                                       "Uid:\t1000\t1001\t1000\t1000\n",
	                                       name, sizeof(name), &euid),
	                 0);
	ck_assert_str_eq(name, "cove-vmm");
	ck_assert_uint_eq(euid, 1001);
	ck_assert_int_eq(registry_parse_status("Name:\tx\n", name, sizeof(name), &euid), -EPROTO);
	ck_assert_int_eq(registry_parse_status("Uid:\t1\t1\n", name, sizeof(name), &euid), -EPROTO);
	ck_assert_int_eq(registry_proc_is_vmm(gone_pid()), -ESRCH);
	ck_assert_int_eq(registry_proc_is_vmm(getpid()), -EPERM);
}
END_TEST

START_TEST(meta_not_through_symlinks)
{
	char dir[PATH_MAX], victim[PATH_MAX], l[PATH_MAX + 32];
	snprintf(dir, sizeof(dir), "%s/e", base);
	snprintf(victim, sizeof(victim), "%s/victim", base);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	int fd = open(victim, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "keep", 4), 4);
	close(fd);
	/* meta.json a symlink: not read through; replaced, victim intact. */
	snprintf(l, sizeof(l), "%s/meta.json", dir);
	ck_assert_int_eq(symlink(victim, l), 0);
	struct registry_meta *m = calloc(1, sizeof(*m));
	ck_assert_int_eq(registry_meta_read(dir, m), -EPROTO);
	snprintf(m->name, sizeof(m->name), "e");
	m->pid = 1;
	ck_assert_int_eq(registry_meta_write(dir, m), 0);
	struct stat st;
	ck_assert_int_eq(lstat(l, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(stat(victim, &st), 0);
	ck_assert_int_eq(st.st_size, 4);
	/* A symlinked directory inside an entry: removed, not followed. */
	char sub[PATH_MAX + 32];
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	ck_assert_int_eq(symlink(base, sub), 0);
	ck_assert_int_eq(registry_remove_tree(dir), 0);
	ck_assert_int_eq(stat(victim, &st), 0);
	free(m);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("registry");
	TCase *tc = tcase_create("registry");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, names);
	tcase_add_test(tc, meta_round_trip);
	tcase_add_test(tc, meta_malformed);
	tcase_add_test(tc, parse_stat);
	tcase_add_test(tc, liveness);
	tcase_add_test(tc, list_cleans_dead);
	tcase_add_test(tc, remove_dead_puts_back_a_new_entry);
	tcase_add_test(tc, open_answers);
	tcase_add_test(tc, list_asks_the_vmm);
	tcase_add_test(tc, snapshot_client);
	tcase_add_test(tc, base_too_long);
	tcase_add_test(tc, base_must_be_ours);
	tcase_add_test(tc, parse_status);
	tcase_add_test(tc, meta_not_through_symlinks);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
