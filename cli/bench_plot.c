/* cove bench --plot FILE.svg: one panel per phase with the empirical CDF
 * of Cove's samples (blue) and, with --vs qemu, QEMU's (orange), on a
 * shared millisecond axis.  Plain SVG, written by hand. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/bench_plot.h"
#include "cli/bench_report.h"

/* The sorted non-NaN values of column p; returns how many. */
static int column(double (*ph)[PH_COUNT], int n, int p, double *out)
{
	int m = 0;
	for (int i = 0; i < n; i++)
		if (!isnan(ph[i][p]))
			out[m++] = ph[i][p];
	qsort(out, (size_t)m, sizeof(double), bench_cmp);
	return m;
}

int bench_plot_svg(const char *path, const char *title, double (*ph)[PH_COUNT],
                   double (*qph)[PH_COUNT], int n)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	bench_plot_svg_to(f, title, ph, qph, n);
	return fclose(f) == 0 ? 0 : -errno;
}

void bench_plot_svg_to(FILE *f, const char *title, double (*ph)[PH_COUNT], double (*qph)[PH_COUNT],
                       int n)
{
	const int pw = 300, phh = 180, cols = 2, margin = 40;
	int panels = 0;
	double *a = malloc(sizeof(double) * (size_t)n), *q = malloc(sizeof(double) * (size_t)n);
	for (int p = 0; p < PH_COUNT; p++)
		if (column(ph, n, p, a) > 0)
			panels++;
	int rows = (panels + cols - 1) / cols;
	fprintf(f,
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	        "font-family=\"sans-serif\" font-size=\"11\">\n<text x=\"10\" y=\"18\" "
	        "font-size=\"14\">%s: CDF per phase (ms); blue Cove%s</text>\n",
	        cols * (pw + margin) + margin, rows * (phh + margin) + 2 * margin, title,
	        qph ? ", orange QEMU microvm" : "");
	int k = 0;
	for (int p = 0; p < PH_COUNT; p++) {
		int na = column(ph, n, p, a), nq = qph ? column(qph, n, p, q) : 0;
		if (!na)
			continue;
		double max = a[na - 1];
		if (nq && q[nq - 1] > max)
			max = q[nq - 1];
		max = max > 0 ? max * 1.05 : 1;
		int x0 = margin + (k % cols) * (pw + margin),
		    y0 = 2 * margin + (k / cols) * (phh + margin);
		k++;
		fprintf(f,
		        "<g transform=\"translate(%d,%d)\"><rect width=\"%d\" height=\"%d\" "
		        "fill=\"none\" stroke=\"#999\"/><text y=\"-4\">%s</text><text x=\"%d\" "
		        "y=\"%d\" text-anchor=\"end\">%.0f ms</text><text y=\"%d\">0</text>\n",
		        x0, y0, pw, phh, bench_phase_names[p], pw, phh + 12, max, phh + 12);
		for (int sys = 0; sys < 2; sys++) {
			const double *v = sys ? q : a;
			int m = sys ? nq : na;
			if (!m)
				continue;
			fprintf(
			    f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
			    sys ? "#e67e22" : "#2c6fbb");
			for (int i = 0; i < m; i++) {
				double x = v[i] / max * pw;
				fprintf(f, "%.1f,%.1f %.1f,%.1f ", x, phh - (double)i / m * phh, x,
				        phh - (double)(i + 1) / m * phh);
			}
			fprintf(f, "\"/>\n");
		}
		fprintf(f, "</g>\n");
	}
	fprintf(f, "</svg>\n");
	free(a);
	free(q);
}
