#!/usr/bin/env bash
# A real-mode guest writes "Cove\n" to an I/O port and halts (tests/integration/kvm_smoke.c).
exec build/itest/kvm_smoke
