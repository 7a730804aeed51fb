// SPDX-License-Identifier: GPL-2.0
/*
 * The loader's windows-file reader alone (tests/test_windows.py):
 *	windows_main WINDOWS KALLSYMS
 * prints each placed window, "NAME FIRST LAST" in hex, sorted, or one
 * error line on stderr and exits 1.
 */
#include <inttypes.h>
#include <stdio.h>

#include "windows.h"

int main(int argc, char **argv)
{
	struct chkwin_windows ws;
	struct ksyms ks;
	char err[400];
	int i;

	if (argc != 3) {
		fprintf(stderr, "usage: windows_main WINDOWS KALLSYMS\n");
		return 2;
	}
	if (chkwin_windows_read(argv[1], &ws, err, sizeof(err))) {
		fprintf(stderr, "error: %s\n", err);
		return 1;
	}
	if (ksyms_load(&ks, argv[2])) {
		chkwin_windows_free(&ws);
		return 2;
	}
	if (chkwin_windows_place(&ws, &ks, err, sizeof(err))) {
		fprintf(stderr, "error: %s\n", err);
		ksyms_free(&ks);
		chkwin_windows_free(&ws);
		return 1;
	}
	for (i = 0; i < ws.n; i++)
		printf("%s 0x%" PRIx64 " 0x%" PRIx64 "\n", ws.w[i].name, ws.w[i].first_addr,
		       ws.w[i].last_addr);
	ksyms_free(&ks);
	chkwin_windows_free(&ws);
	return 0;
}
