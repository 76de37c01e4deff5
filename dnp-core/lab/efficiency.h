/* SPDX-License-Identifier: MIT */
/*
 * lab/efficiency — `dnp-lab efficiency`: reproduces the APEnet+ torus-link
 * efficiency analysis (EURETILE report, torus link bandwidth and latency)
 * with a cycle-by-cycle simulation of ONE saturated link, whose flow control
 * is dnp-core/link.
 *
 * Hardware modelled: one 16-byte word per cycle in each direction; packets
 * of 256 payload words + 4 framing words (magic, start, header, footer);
 * every credit period each side's TX spends 2 cycles on a credit (magic +
 * credit word) between C data cycles (E2 = C/(C+2)); a word reaches the far
 * end L_R cycles after it is sent and is visible there (in the RX FIFO
 * status, or at the TX control for a credit) L_L cycles later; the receiver
 * drains its RX FIFO at one word per cycle. Node A sends, node B only
 * returns credits. A's credit estimate and start rule are a struct dnp_link
 * (credit model HW by default); B's RX FIFO and credit latch are another.
 *
 * Measured efficiency = payload words delivered / cycles, over a whole number
 * of stall-resume periods after a warm-up. The model is the report's
 * E_T = E1 x E2 x E3, extended to deeper FIFOs in docs/efficiency.md; with
 * EXACT credits (--exact) the sender never waits and the model is E1 x E2.
 *
 * Everything is local to one call; no global state; any thread.
 */
#ifndef DNP_LAB_EFFICIENCY_H
#define DNP_LAB_EFFICIENCY_H

#include <stdint.h>

#include "link.h"

struct dnp_lab_eff_conf {
	uint64_t warmup;         /* cycles before measuring */
	uint64_t cycles;         /* measured cycles (rounded to whole stall periods) */
	uint32_t credit_period;  /* C: data cycles between two 2-cycle credits */
	uint32_t remote_latency; /* L_R, cycles */
	uint32_t local_latency;  /* L_L, cycles */
	uint32_t fifo_words;
	uint32_t t_red, t_yellow;
	uint32_t payload_words; /* 256 (4096 bytes) */
	uint32_t frame_words;   /* payload + 4 */
	uint32_t phase;         /* B's credit grid starts this many cycles after A's */
	uint8_t rule;           /* enum dnp_start_rule */
	uint8_t credit_model;   /* enum dnp_credit_model */
};

struct dnp_lab_eff_result {
	double measured;          /* payload words delivered per cycle */
	double model, e1, e2, e3; /* E_T = e1 * e2 * e3 */
	double w_model;           /* W = L_T + C */
	/*
	 * The same alternation with the lab's credit timing (docs/efficiency.md):
	 * W_hw = L_T + (C + 2) + 1 + (C + 1) / 2 (latch phase averaged), and the
	 * credit slots cost nothing while the sender waits.
	 */
	double w_hw, model_hw;
	unsigned burst_packets; /* VCT: n = floor(T_RED / frame) packets per burst */
	uint64_t window;        /* measured cycles */
	uint64_t payload;       /* payload words in the window */
	uint64_t stalls;        /* stall-resume periods in the window */
	double period;          /* cycles between two resumes, mean */
	double wait_mean;       /* cycles from the last word sent to the resume */
	uint64_t wait_min, wait_max;
	double burst_words;     /* words sent between two stalls, mean */
	uint32_t max_occupancy; /* of B's RX FIFO */
	uint64_t overflows;     /* dnp_link_rx_accept refusals: must be 0 */
};

/* Hardware defaults for a FIFO fifo_x times 512 words (T_RED = depth - 6, T_YELLOW = depth / 2). */
void dnp_lab_eff_conf_default(struct dnp_lab_eff_conf *c, int rule, unsigned fifo_x);
/* The analytic model for c (fills the model fields of r). -EINVAL if no packet fits under T_RED. */
int dnp_lab_eff_model(const struct dnp_lab_eff_conf *c, struct dnp_lab_eff_result *r);
/* Runs the simulation. -EINVAL (bad conf), -ENOMEM, -EPIPE (a link went BROKEN). */
int dnp_lab_eff_simulate(const struct dnp_lab_eff_conf *c, struct dnp_lab_eff_result *r);

/*
 * One case with the defaults: rule is DNP_START_VCT or DNP_START_STOP_AT_RED,
 * fifo_x 1, 2, 4 or 8. Returns 0 or a negative errno as above.
 */
int dnp_lab_efficiency_run(int rule, unsigned fifo_x, double *measured, double *model);

/*
 * `dnp-lab efficiency [--csv] [--cycles N] [--credit-period C] [--t-red N]
 * [--t-yellow N] [--phase P] [--exact]`: argv[0] is "efficiency". Prints the
 * table (or CSV `rule,fifo_x,measured,model`) on stdout. Returns 0, 1 if an
 * x1 case is more than 5% off the model, 2 on bad usage.
 */
int dnp_lab_efficiency_main(int argc, char **argv);

#endif
