# What both out-of-tree boards share (included by their mpconfigboard.mk): QEMU's ARM MPS2
# machines, single-precision floats as the stm32 and rp2 ports build them.
QEMU_ARCH = arm
CFLAGS += -DQEMU_SOC_MPS2
LDSCRIPT = mcu/arm/mps2.ld
MICROPY_FLOAT_IMPL = float
