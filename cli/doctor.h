/* cove doctor (doctor.c). Returns the process exit status: 0, 1 when
 * the request failed, 2 for bad usage. */
#ifndef COVE_CLI_DOCTOR_H
#define COVE_CLI_DOCTOR_H

int cli_doctor(int argc, char **argv);

#endif
