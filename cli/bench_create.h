/* cove bench create (bench_create.c): create -> first command through
 * coved, against a command in a running sandbox. */
#ifndef COVE_CLI_BENCH_CREATE_H
#define COVE_CLI_BENCH_CREATE_H

/* argv[1] is "create"; the exit status. */
int bench_create(int argc, char **argv);

#endif
