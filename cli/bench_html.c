/* cove bench --html (bench_html.h). */
#include "cli/bench_html.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/bench_plot.h"

/* s with & < > " ' as entities. */
static void esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* One table row of the non-NaN values of column p; nothing when none. */
static void row(FILE *f, const char *who, double (*ph)[PH_COUNT], int n, int p, double *tmp)
{
	int m = 0;
	for (int i = 0; i < n; i++)
		if (!isnan(ph[i][p]))
			tmp[m++] = ph[i][p];
	if (!m)
		return;
	qsort(tmp, (size_t)m, sizeof(double), bench_cmp);
	fprintf(f, "<tr><th>%s</th><td>%s</td><td>%d</td>", bench_phase_names[p], who, m);
	const double pct[] = { 0, 50, 90, 99, 100 };
	for (size_t k = 0; k < sizeof(pct) / sizeof(pct[0]); k++)
		fprintf(f, "<td>%.1f</td>", bench_pct(tmp, m, pct[k]));
	fputs("</tr>\n", f);
}

int bench_html_write(const char *path, const struct bench_html_run *run, double (*ph)[PH_COUNT],
                     double (*qph)[PH_COUNT])
{
	double *tmp = malloc(sizeof(double) * (size_t)(run->n > 0 ? run->n : 1));
	if (!tmp)
		return -ENOMEM;
	FILE *f = fopen(path, "w");
	if (!f) {
		int e = -errno;
		free(tmp);
		return e;
	}
	char when[32] = "";
	time_t now = time(NULL);
	struct tm tm;
	if (gmtime_r(&now, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
	fputs("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<meta name=\"color-scheme\" content=\"light dark\">\n<title>cove bench ",
	      f);
	esc(f, run->mode);
	fputs("</title>\n<style>body{font:14px/1.4 system-ui,sans-serif;margin:1rem}"
	      "table{border-collapse:collapse}th,td{padding:.2rem .6rem;border-bottom:1px solid "
	      "#8884;text-align:right}th:first-child{text-align:left}"
	      "svg{max-width:100%;height:auto;background:#fff}</style>\n</head><body>\n<h1>cove "
	      "bench ",
	      f);
	esc(f, run->mode);
	fprintf(f, "</h1>\n<p>%d samples, %u CPU, %llu MiB, image ", run->n, run->cpus,
	        (unsigned long long)run->memory_mib);
	esc(f, run->image ? run->image : "(default)");
	fprintf(f,
	        "; written %s.</p>\n<table>\n<thead><tr><th>phase</th><th>system</th>"
	        "<th>n</th><th>min</th><th>p50</th><th>p90</th><th>p99</th><th>max</th>"
	        "</tr></thead>\n<tbody>\n",
	        when);
	for (int p = 0; p < PH_COUNT; p++) {
		row(f, "Cove", ph, run->n, p, tmp);
		if (qph)
			row(f, "QEMU microvm", qph, run->n, p, tmp);
	}
	fputs("</tbody></table>\n<p>Milliseconds from the start of each sample.</p>\n", f);
	bench_plot_svg_to(f, strcmp(run->mode, "boot") ? "restore" : "boot", ph, qph, run->n);
	fputs("</body></html>\n", f);
	free(tmp);
	return fclose(f) == 0 ? 0 : -errno;
}
