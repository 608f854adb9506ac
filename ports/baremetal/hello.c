/* SPDX-License-Identifier: MIT */
/*
 * Smoke program for the bare-metal ports: prints through semihosting, shows
 * argv and the heap, and exits with the status given as its first argument
 * (so the exit-code path through QEMU can be checked). With "fault" it reads
 * unmapped memory instead, which the board's fault handler must report.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int i;
    char *p = malloc(1u << 20);
    printf("hello from heapkit bare metal, argc=%d\n", argc);
    for (i = 0; i < argc; i++) {
        printf("argv[%d]=%s\n", i, argv[i]);
    }
    if (p == NULL) {
        printf("malloc(1 MiB) failed\n");
        return 1;
    }
    memset(p, 0xa5, 1u << 20);
    printf("malloc(1 MiB) at %p\n", (void *)p);
    free(p);
    if (argc > 1 && strcmp(argv[1], "fault") == 0) {
        return (int)*(volatile uint32_t *)(uintptr_t)0xF0000000u;
    }
    return argc > 1 ? atoi(argv[1]) : 0;
}
