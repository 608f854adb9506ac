/* SPDX-License-Identifier: MIT */
/*
 * The C runtime shared by the bare-metal ports: what crt0 does on a hosted
 * toolchain, for programs linked with -nostartfiles against the board's
 * linker script. The reset handler (board startup) sets the stack and calls
 * hk_runtime_start(); main's return value, or exit()'s argument, becomes
 * QEMU's exit status through semihosting SYS_EXIT_EXTENDED, so a failing
 * test fails its ctest run.
 *
 * Linker-script symbols used: __data_load/__data_start/__data_end,
 * __bss_start__/__bss_end__, __heap_start/__heap_end (the malloc heap).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "board.h"

extern char __data_load[], __data_start[], __data_end[];
extern char __bss_start__[], __bss_end__[];
extern char __heap_start[], __heap_end[];

int main(int argc, char **argv);
void __libc_init_array(void);

#define CMDLINE_MAX 1024
#define ARGV_MAX 32

static char cmdline[CMDLINE_MAX];
static char *argv_words[ARGV_MAX + 1];

/* Splits the semihosting command line at spaces; argv[0] is whatever QEMU put first. */
static int build_argv(void)
{
    struct {
        char *buf;
        uintptr_t len;
    } block = {cmdline, CMDLINE_MAX};
    int argc = 0;
    char *p = cmdline;

    if (hk_semihost(HK_SH_SYS_GET_CMDLINE, &block) != 0) {
        cmdline[0] = '\0';
    }
    while (*p != '\0' && argc < ARGV_MAX) {
        while (*p == ' ') {
            *p++ = '\0';
        }
        if (*p == '\0') {
            break;
        }
        argv_words[argc++] = p;
        while (*p != '\0' && *p != ' ') {
            p++;
        }
    }
    argv_words[argc] = NULL;
    return argc;
}

void hk_runtime_start(void)
{
    int argc;
    /* memmove: on boards that load .data where it runs, source and destination are the same. */
    memmove(__data_start, __data_load, (size_t)(__data_end - __data_start));
    memset(__bss_start__, 0, (size_t)(__bss_end__ - __bss_start__));
    __libc_init_array();
    hk_board_init_io();
    argc = build_argv();
    exit(main(argc, argv_words));
}

void hk_board_exit(int status)
{
    uintptr_t block[2] = {HK_SH_APPLICATION_EXIT, (uintptr_t)(unsigned)status};
    hk_semihost(HK_SH_SYS_EXIT_EXTENDED, block);
    for (;;) {
    }
}

void hk_board_fail(const char *message)
{
    hk_semihost(HK_SH_SYS_WRITE0, (void *)(uintptr_t)message);
    hk_board_exit(70);
}

/* libc's last step after exit() has flushed stdio. */
void _exit(int status)
{
    hk_board_exit(status);
}

#ifndef __PICOLIBC__
/* crti.o's hooks, left out by -nostartfiles; newlib's init and fini arrays call them. */
void _init(void);
void _fini(void);
void _init(void) {}
void _fini(void) {}

/* newlib's malloc grows its heap here: the linker script's heap region, never into the stack. */
void *_sbrk(ptrdiff_t incr)
{
    static char *brk = __heap_start;
    char *prev = brk;
    if (incr > __heap_end - brk || incr < __heap_start - brk) {
        errno = ENOMEM;
        return (void *)-1;
    }
    brk += incr;
    return prev;
}
#endif
