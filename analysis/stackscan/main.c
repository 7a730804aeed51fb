/* stackscan: find aarch64 code that loads or stores below sp, such as an
 * epilogue that releases its frame before the last read from it (the
 * GCC 4.9.4 ext4_chksum() bug).  Exit 0: nothing found, 1: findings the
 * allow-list does not explain, 2: error. */
#include "allow.h"
#include "image.h"
#include "report.h"
#include "scan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: stackscan [--json] [--system-map FILE] [--allow FILE]\n"
	"                 [--windows-out FILE] KERNEL\n"
	"  KERNEL        aarch64 vmlinux, module (.ko) or object, or a raw\n"
	"                arm64 Image; either may be gzip-compressed (vmlinuz)\n"
	"  --system-map  take function bounds from this System.map (needed for\n"
	"                a raw Image or a stripped vmlinux)\n"
	"  --allow       allow-list: lines \"FUNCTION[+0xOFF] REASON\"\n"
	"  --json        one JSON object instead of text lines\n"
	"  --windows-out also write the findings as a windows file for\n"
	"                chkwin --windows (docs/windows.md)\n"
	"exit status: 0 no findings, 1 findings, 2 error\n";

static int die(const char *msg)
{
	fprintf(stderr, "stackscan: error: %s\n", msg);
	return 2;
}

/* A module's name as kallsyms spells it: the file's name up to ".ko",
 * '-' as '_'. */
static void module_name(const char *path, char *buf, size_t len)
{
	const char *base = strrchr(path, '/');
	size_t i, n;

	base = base ? base + 1 : path;
	n = strstr(base, ".ko") ? (size_t)(strstr(base, ".ko") - base) : strlen(base);
	if (n >= len)
		n = len - 1;
	for (i = 0; i < n; i++)
		buf[i] = base[i] == '-' ? '_' : base[i];
	buf[n] = 0;
}

/* Whole or not at all: a temporary file renamed over FILE. */
static int write_windows(const char *path, struct scanner *s,
			 const struct report *r, char *err)
{
	char tmp[4096];
	FILE *f;
	size_t n;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return fail(err, "%s: path too long", path);
	f = fopen(tmp, "w");
	if (!f)
		return fail(err, "%s: %s", tmp, strerror(errno));
	n = report_windows(f, s, r);
	if (fflush(f) || ferror(f)) {
		fclose(f);
		unlink(tmp);
		return fail(err, "%s: write failed", tmp);
	}
	if (fclose(f) || rename(tmp, path)) {
		unlink(tmp);
		return fail(err, "%s: %s", path, strerror(errno));
	}
	fprintf(stderr, "stackscan: %zu window%s written to %s\n", n,
		n == 1 ? "" : "s", path);
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *sysmap = NULL, *allow_path = NULL, *wout = NULL;
	char module[64];
	char err[ERRLEN];
	struct image img;
	struct allow allow = { 0 };
	struct scanner *s;
	struct finding *found = NULL;
	struct scan_stats st = { 0 };
	struct report r = { 0 };
	int json = 0, i;
	size_t bad;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--system-map") || !strcmp(a, "--allow") ||
			   !strcmp(a, "--windows-out")) {
			if (i + 1 == argc) {
				snprintf(err, sizeof(err), "%s needs a file", a);
				return die(err);
			}
			if (!strcmp(a, "--allow"))
				allow_path = argv[++i];
			else if (!strcmp(a, "--windows-out"))
				wout = argv[++i];
			else
				sysmap = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			snprintf(err, sizeof(err), "unknown option %s (see --help)", a);
			return die(err);
		} else if (path) {
			snprintf(err, sizeof(err), "more than one KERNEL: %s and %s",
				 path, a);
			return die(err);
		} else {
			path = a;
		}
	}
	if (!path)
		return die("no KERNEL given (see --help)");
	if (allow_path && allow_load(&allow, allow_path, err))
		return die(err);
	if (image_load(&img, path, sysmap, err)) {
		image_free(&img);
		allow_free(&allow);
		return die(err);
	}
	if (!(s = scanner_new(err)) ||
	    scan_image(s, &img, &found, &r.n, &st, err)) {
		scanner_free(s);
		image_free(&img);
		allow_free(&allow);
		free(found);
		return die(err);
	}
	r.path = path;
	r.symbols = sysmap ? sysmap : "symtab";
	r.img = &img;
	r.f = found;
	r.st = &st;
	r.allow = &allow;
	if (!strcmp(img.kind, "module")) {
		module_name(path, module, sizeof(module));
		r.module = module;
	}
	bad = json ? report_json(stdout, s, &r) : report_text(stdout, s, &r);
	if (wout && write_windows(wout, s, &r, err)) {
		scanner_free(s);
		image_free(&img);
		allow_free(&allow);
		free(found);
		return die(err);
	}
	scanner_free(s);
	image_free(&img);
	allow_free(&allow);
	free(found);
	if (fflush(stdout) || ferror(stdout))
		return die("writing the report failed");
	return bad ? 1 : 0;
}
