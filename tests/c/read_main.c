// SPDX-License-Identifier: GPL-2.0
/*
 * chkwin --read without the recorder: the same reader (loader/readlog.c),
 * built on the host with no kernel's vmlinux.h, for the fuzzer and the
 * differential test.  Usage: read_main FILE (JSON lines, as -f json).
 */
#include <stdio.h>

#include "readlog.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "read_main: error: usage: read_main FILE\n");
		return 2;
	}
	return chkwin_read_log(argv[1], FORMAT_JSON);
}
