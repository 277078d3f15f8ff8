# Out-of-tree QEMU board (BOARD_DIR) for host/tools/mcu.py: code compiled for a Cortex-M0+
# (ARMv6-M, the RP2040's instruction set, no FPU: soft single-precision floats), run on
# QEMU's mps2-an385 machine (a Cortex-M3, which executes ARMv6-M code unchanged).
include $(BOARD_DIR)/../mps2.mk
QEMU_MACHINE = mps2-an385

CFLAGS += -mthumb -mcpu=cortex-m0plus -mfloat-abi=soft
CFLAGS += -DMICROPY_HW_MCU_NAME='"Cortex-M0+"'

SRC_BOARD_O = shared/runtime/gchelper_native.o shared/runtime/gchelper_thumb1.o

MPY_CROSS_FLAGS += -march=armv6m
