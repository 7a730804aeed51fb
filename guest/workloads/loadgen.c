// SPDX-License-Identifier: GPL-2.0
/*
 * loadgen: hackbench-like load beside the reproducer.  Pairs of threads
 * bounce small messages through pipes, so the scheduler keeps waking
 * threads on other CPUs and sends rescheduling IPIs: more interrupts, more
 * chances for one to land in ext4_chksum()'s window.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct pair {
	int ping[2];		/* sender -> receiver */
	int pong[2];		/* receiver -> sender */
	size_t msg_bytes;
	double deadline;
	unsigned long messages;
	int failed;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int xfer(int fd, char *buf, size_t len, int out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? write(fd, buf + done, len - done)
				: read(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static char *message_buffer(struct pair *p)
{
	char *buf = calloc(1, p->msg_bytes);

	if (!buf) {
		perror("loadgen: calloc");
		p->failed = 1;
	}
	return buf;
}

static void *sender(void *arg)
{
	struct pair *p = arg;
	char *buf = message_buffer(p);

	if (!buf)
		return NULL;
	while (now() < p->deadline) {
		if (xfer(p->ping[1], buf, p->msg_bytes, 1) ||
		    xfer(p->pong[0], buf, p->msg_bytes, 0)) {
			perror("loadgen: sender pipe");
			p->failed = 1;
			break;
		}
		p->messages++;
	}
	/* Closing the ping pipe tells the receiver to stop. */
	close(p->ping[1]);
	free(buf);
	return NULL;
}

static void *receiver(void *arg)
{
	struct pair *p = arg;
	char *buf = message_buffer(p);

	if (!buf)
		return NULL;
	while (!xfer(p->ping[0], buf, p->msg_bytes, 0)) {
		if (xfer(p->pong[1], buf, p->msg_bytes, 1)) {
			perror("loadgen: receiver pipe");
			p->failed = 1;
			break;
		}
	}
	close(p->pong[1]);
	free(buf);
	return NULL;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: loadgen [-g GROUPS] [-d SECONDS] [-s MSG_BYTES]\n");
}

static int parse_positive(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || *end || *out <= 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	long groups = 4, seconds = 10, msg_bytes = 100;
	unsigned long total = 0;
	struct pair *pairs;
	pthread_t *threads;
	int opt, failed = 0;
	long i;

	opterr = 0;	/* one line of our own instead */
	while ((opt = getopt(argc, argv, "g:d:s:h")) != -1) {
		long *target = opt == 'g' ? &groups : opt == 'd' ? &seconds :
			       opt == 's' ? &msg_bytes : NULL;

		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (!target || parse_positive(optarg, target)) {
			fprintf(stderr, "loadgen: error: bad option -%c; ", optopt ? optopt : opt);
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "loadgen: error: unexpected argument '%s'; ", argv[optind]);
		usage(stderr);
		return 2;
	}

	pairs = calloc((size_t)groups, sizeof(*pairs));
	threads = calloc((size_t)groups * 2, sizeof(*threads));
	if (!pairs || !threads) {
		perror("loadgen: calloc");
		return 1;
	}
	for (i = 0; i < groups; i++) {
		struct pair *p = &pairs[i];

		p->msg_bytes = (size_t)msg_bytes;
		p->deadline = now() + (double)seconds;
		if (pipe(p->ping) || pipe(p->pong)) {
			perror("loadgen: pipe");
			return 1;
		}
		if (pthread_create(&threads[2 * i], NULL, receiver, p) ||
		    pthread_create(&threads[2 * i + 1], NULL, sender, p)) {
			fprintf(stderr, "loadgen: error: pthread_create failed\n");
			return 1;
		}
	}
	for (i = 0; i < groups * 2; i++)
		pthread_join(threads[i], NULL);
	for (i = 0; i < groups; i++) {
		total += pairs[i].messages;
		failed |= pairs[i].failed;
		close(pairs[i].ping[0]);
		close(pairs[i].pong[0]);
	}
	printf("loadgen: groups=%ld seconds=%ld messages=%lu rate=%.0f/s\n",
	       groups, seconds, total, (double)total / (double)seconds);
	free(pairs);
	free(threads);
	return failed;
}
