/* unit.h - the smallest test harness: CHECK counts, reports, and main()
 * returns non-zero when anything failed. Output ends with "N passed, N failed". */
#ifndef UNIT_H
#define UNIT_H
#include <stdio.h>

static int unit_pass, unit_fail;

#define CHECK(cond, ...) do { \
	if (cond) unit_pass++; \
	else { unit_fail++; fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
} while (0)

static int
unit_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, unit_pass, unit_fail);
	return unit_fail != 0;
}
#endif
