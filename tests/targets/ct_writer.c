/*
 * ct-writer: the traced side of the CallTrace stress test, as its own
 * process.  Links the real probe (shared library), which attaches to the
 * CallTrace region the engine announced in the cTP header named by the
 * CTP_* environment, then runs the ct-load write load (threads putting from
 * their loops and from SIGPROF handlers) and writes its books to a file:
 *
 *   ct-writer THREADS SECONDS TIMER_US SEED REPORT
 *
 *   T <put> <dropped> <puts> <drops> <unattached> <signals> <nested>
 *   S <thread> <stack> <put - dropped>        (one line per non-zero stack)
 *
 * Exit 0 after writing the report, 77 when the probe found no CallTrace
 * region, 1 on other errors.
 */
#include "../common/ct-load.h"

int main(int argc, char **argv)
{
	static struct ctl_load load;
	struct ctl_totals s;
	FILE *f;

	if (argc != 6) {
		fprintf(stderr,
			"usage: ct-writer THREADS SECONDS TIMER_US SEED "
			"REPORT\n");
		return 2;
	}
	if (!corotop_probe_init()) {
		fprintf(stderr, "ct-writer: probe: %s\n",
			corotop_probe_status());
		return 77;
	}
	if (!ctl_start(&load, (unsigned)atoi(argv[1]), atof(argv[2]),
		       (unsigned)atoi(argv[3]), strtoull(argv[4], NULL, 10))) {
		perror("ct-writer: start");
		return 1;
	}
	ctl_join(&load);
	s = ctl_totals(&load);
	if (s.unattached == s.puts && s.puts) {
		fprintf(stderr, "ct-writer: no CallTrace region attached\n");
		return 77;
	}
	f = fopen(argv[5], "w");
	if (!f) {
		perror(argv[5]);
		return 1;
	}
	fprintf(f, "T %llu %llu %llu %llu %llu %llu %llu\n",
		(unsigned long long)s.put, (unsigned long long)s.dropped,
		(unsigned long long)s.puts, (unsigned long long)s.drops,
		(unsigned long long)s.unattached, (unsigned long long)s.signals,
		(unsigned long long)s.nested);
	for (unsigned t = 0; t < load.threads; t++)
		for (unsigned k = 0; k < CTL_STACKS; k++) {
			uint64_t e = ctl_expected(&load, t, k);

			if (e)
				fprintf(f, "S %u %u %llu\n", t, k,
					(unsigned long long)e);
		}
	if (fclose(f) != 0) {
		perror(argv[5]);
		return 1;
	}
	return 0;
}
