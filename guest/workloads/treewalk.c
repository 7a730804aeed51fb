// SPDX-License-Identifier: GPL-2.0
/*
 * treewalk: the inode-heavy loop of the reproducers (drop caches, stat
 * every file), with a seeded phase.
 *
 * Under QEMU's icount clock a periodic tick and a periodic walk alias: the
 * same kernel repeats one trajectory, and where the tick lands in the
 * checksum code is set by the kernel's exact instruction counts.  Every
 * EVERY entries the walker spins a seeded, uniformly drawn number of
 * iterations over at least one timer period, so the phase between the tick
 * and the checksum calls is redrawn many times a boot and boots with
 * different seeds are independent draws.  The same seed repeats the same
 * walk.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DROP_CACHES "/proc/sys/vm/drop_caches"

static struct {
	uint64_t state;		/* splitmix64 */
	unsigned long every;	/* entries between spins; 0: never spin */
	uint64_t spin_max;	/* iterations are drawn from [0, spin_max) */
	unsigned long entries;
	unsigned long errors;	/* entries lstat() refused: a bad checksum is EBADMSG */
	unsigned long long spun;
} walk;

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Two instructions an iteration on arm64, so a spin's length is known in
 * instructions, which is what icount turns into guest time. */
static void spin(uint64_t n)
{
	if (!n)
		return;
#ifdef __aarch64__
	__asm__ volatile("1:	subs	%0, %0, #1\n"
			 "	b.ne	1b\n"
			 : "+r"(n) : : "cc");
#else
	for (volatile uint64_t i = n; i; i--)
		;
#endif
}

static void visited(void)
{
	walk.entries++;
	if (walk.every && walk.entries % walk.every == 0) {
		uint64_t n = splitmix64(&walk.state) % walk.spin_max;

		spin(n);
		walk.spun += n;
	}
}

/*
 * lstat() every entry under the directory dirfd names, depth first.  An
 * entry that cannot be looked up (the checksum failures this workload
 * provokes) is counted and skipped, as find would go on.
 */
static void walk_dir(int dirfd)
{
	DIR *dir = fdopendir(dirfd);
	struct dirent *d;

	if (!dir) {
		walk.errors++;
		close(dirfd);
		return;
	}
	while ((d = readdir(dir))) {
		struct stat st;

		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		visited();
		if (fstatat(dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
			walk.errors++;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

			if (fd < 0)
				walk.errors++;
			else
				walk_dir(fd);
		}
	}
	closedir(dir);
}

static int walk_top(const char *path)
{
	struct stat st;
	int fd;

	if (lstat(path, &st) || (fd = open(path, O_RDONLY | O_DIRECTORY)) < 0) {
		/* ext4's bad checksum (EFSBADCRC) and corruption (EFSCORRUPTED) */
		if (errno == EBADMSG || errno == EUCLEAN) {
			walk.errors++;
			return 0;
		}
		fprintf(stderr, "treewalk: error: cannot walk %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	visited();
	walk_dir(fd);
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int drop_caches(void)
{
	int fd = open(DROP_CACHES, O_WRONLY);

	if (fd < 0 || write(fd, "3", 1) != 1) {
		fprintf(stderr, "treewalk: error: cannot write %s: %s\n",
			DROP_CACHES, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return close(fd);
}

static int number(const char *text, const char *what, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(text, &end, 0);
	if (errno || end == text || *end || text[0] == '-') {
		fprintf(stderr, "treewalk: error: %s %s is not a whole number\n",
			what, text);
		return -1;
	}
	return 0;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: treewalk {-t SECONDS | -c PASSES} [-d] [-p SEED -e EVERY -n SPIN] DIR...\n"
		"  -t SECONDS  walk passes until this much time has passed\n"
		"  -c PASSES   stop after this many passes (first of -t and -c)\n"
		"  -d          drop the page, dentry and inode caches before each pass\n"
		"  -p SEED     seed of the spins (splitmix64)\n"
		"  -e EVERY    spin after every EVERY entries\n"
		"  -n SPIN     spins last [0, SPIN) iterations of two instructions\n");
}

int main(int argc, char **argv)
{
	uint64_t seconds = 0, count = 0, seed = 0, every = 0, spin_max = 0;
	int drop = 0, seeded = 0, opt;
	unsigned long passes = 0;
	double deadline;

	opterr = 0;
	while ((opt = getopt(argc, argv, "t:c:dp:e:n:h")) != -1) {
		switch (opt) {
		case 't':
			if (number(optarg, "-t", &seconds))
				return 2;
			break;
		case 'c':
			if (number(optarg, "-c", &count))
				return 2;
			break;
		case 'd':
			drop = 1;
			break;
		case 'p':
			if (number(optarg, "-p", &seed))
				return 2;
			seeded = 1;
			break;
		case 'e':
			if (number(optarg, "-e", &every))
				return 2;
			break;
		case 'n':
			if (number(optarg, "-n", &spin_max))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "treewalk: error: unknown option or missing value: -%c (-h for help)\n",
				optopt);
			return 2;
		}
	}
	if ((!seconds && !count) || optind == argc) {
		fprintf(stderr, "treewalk: error: -t SECONDS or -c PASSES, and at least one DIR, are needed\n");
		return 2;
	}
	if (seeded != (every > 0) || seeded != (spin_max > 0)) {
		fprintf(stderr, "treewalk: error: -p, -e and -n go together, all above 0\n");
		return 2;
	}
	walk.state = seed;
	walk.every = every;
	walk.spin_max = spin_max;

	deadline = seconds ? now() + (double)seconds : 0;
	do {
		if (drop && drop_caches())
			return 1;
		for (int i = optind; i < argc; i++)
			if (walk_top(argv[i]))
				return 1;
		passes++;
	} while ((!count || passes < count) && (!seconds || now() < deadline));
	printf("passes: %lu\nentries: %lu\nerrors: %lu\nspun: %llu\n", passes,
	       walk.entries, walk.errors, walk.spun);
	return 0;
}
