#include "kvm_backend.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static bool file_exists(const char *root, const char *path)
{
	char buf[512];
	struct stat st;
	snprintf(buf, sizeof(buf), "%s%s", root, path);
	return stat(buf, &st) == 0;
}

/* Looks for " word" in the first flags line of cpuinfo. */
static void cpu_flags(const char *root, bool *hypervisor, char *vendor)
{
	char path[512], line[4096];
	snprintf(path, sizeof(path), "%s/proc/cpuinfo", root);
	*hypervisor = false;
	if (vendor)
		vendor[0] = 0;
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = ' ';
		*hypervisor = strstr(line, " hypervisor ") != NULL;
		if (vendor && strstr(line, " vmx "))
			strcpy(vendor, "vmx");
		else if (vendor && strstr(line, " svm "))
			strcpy(vendor, "svm");
		break;
	}
	fclose(f);
}

enum kvm_backend kvm_backend_detect(const char *root, char *vendor)
{
	bool hypervisor;
	cpu_flags(root, &hypervisor, vendor);
	if (file_exists(root, "/sys/module/kvm_intel") || file_exists(root, "/sys/module/kvm_amd"))
		return hypervisor ? KVM_BACKEND_NESTED : KVM_BACKEND_HW;
	if (file_exists(root, "/sys/module/kvm_pvm"))
		return KVM_BACKEND_PVM;
	if (file_exists(root, "/sys/module/kvm") || file_exists(root, "/dev/kvm"))
		return KVM_BACKEND_UNKNOWN;
	return KVM_BACKEND_NONE;
}

const char *kvm_backend_name(enum kvm_backend b)
{
	switch (b) {
	case KVM_BACKEND_HW:
		return "hardware";
	case KVM_BACKEND_NESTED:
		return "nested";
	case KVM_BACKEND_PVM:
		return "PVM";
	case KVM_BACKEND_UNKNOWN:
		return "unknown";
	case KVM_BACKEND_NONE:
		break;
	}
	return "none";
}
