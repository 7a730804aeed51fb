// SPDX-License-Identifier: GPL-2.0
/*
 * perf-arrivals: what `perf record -g` of the lab's tracepoints found of
 * chkwin's question, read from `perf script -F event,ip,sym,symoff
 * --show-lost-events` on stdin.  It runs in the guest (the loader-bench
 * scenario), where perf.data's symbols are, and prints three kinds of line:
 *
 *   lost N                 samples perf reported lost
 *   calls N                ext4:ext4_chksum_end events
 *   arrival SYM+OFF N      irq_handler_entry call chains whose frame after
 *                          el1h_64_irq (the interrupted pc) is in an
 *                          ext4_chksum* function
 *
 * A line longer than the buffer is read in pieces; only its first piece
 * is looked at.  Exit status 1 with one line on stderr on a read error or
 * when the arrival table is full.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEYS	4096
#define KEY_LEN		96

struct arrival {
	char key[KEY_LEN];
	unsigned long long n;
};

static struct arrival arrivals[MAX_KEYS];
static int narrivals;

static int count_arrival(const char *key)
{
	int i;

	for (i = 0; i < narrivals; i++) {
		if (!strcmp(arrivals[i].key, key)) {
			arrivals[i].n++;
			return 0;
		}
	}
	if (narrivals == MAX_KEYS)
		return -1;
	snprintf(arrivals[narrivals].key, KEY_LEN, "%s", key);
	arrivals[narrivals++].n = 1;
	return 0;
}

/* The n-th (0-based) whitespace-separated word of line, copied into out. */
static int word(const char *line, int n, char *out, size_t len)
{
	const char *p = line;
	size_t k;

	for (;;) {
		p += strspn(p, " \t\n");
		if (!*p)
			return -1;
		k = strcspn(p, " \t\n");
		if (!n--) {
			if (k >= len)
				k = len - 1;
			memcpy(out, p, k);
			out[k] = '\0';
			return 0;
		}
		p += k;
	}
}

/* "SYSTEM:EVENT:" alone on its line (lower case, digits, _) opens an event. */
static int event_name(const char *line, char *out, size_t len)
{
	const char *p;
	char second[8];
	int colons = 0;

	if (word(line, 0, out, len) || !word(line, 1, second, sizeof(second)) || !*out)
		return -1;
	for (p = out; *p; p++) {
		if (*p == ':')
			colons++;
		else if (!(*p >= 'a' && *p <= 'z') && !(*p >= '0' && *p <= '9') && *p != '_')
			return -1;
		if (*p == ':' && (p == out || p[-1] == ':'))
			return -1;
	}
	return colons == 2 && p[-1] == ':' ? 0 : -1;
}

int main(int argc, char **argv)
{
	unsigned long long lost = 0, calls = 0;
	char line[512], event[KEY_LEN], sym[KEY_LEN];
	int in_irq = 0, after = 0, i;

	if (argc != 1) {
		fprintf(stderr, "perf-arrivals: error: unexpected argument '%s'; it reads perf script on stdin\n",
			argv[1]);
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "PERF_RECORD_LOST", 16)) {
			const char *last = strrchr(line, ' ');

			lost += strtoull(last ? last + 1 : line, NULL, 10);
			continue;
		}
		if (!event_name(line, event, sizeof(event))) {
			in_irq = !strcmp(event, "irq:irq_handler_entry:");
			calls += !strcmp(event, "ext4:ext4_chksum_end:");
			after = 0;
			continue;
		}
		if (!in_irq || word(line, 1, sym, sizeof(sym)))
			continue;
		if (after) {
			if (!strncmp(sym, "ext4_chksum", 11) && count_arrival(sym)) {
				fprintf(stderr, "perf-arrivals: error: more than %d distinct arrival pcs\n",
					MAX_KEYS);
				return 1;
			}
			in_irq = 0;
		} else if (!strncmp(sym, "el1h_64_irq+", 12)) {
			after = 1;
		}
	}
	if (ferror(stdin)) {
		fprintf(stderr, "perf-arrivals: error: reading stdin: %s\n", strerror(errno));
		return 1;
	}
	printf("lost %llu\ncalls %llu\n", lost, calls);
	for (i = 0; i < narrivals; i++)
		printf("arrival %s %llu\n", arrivals[i].key, arrivals[i].n);
	return 0;
}
