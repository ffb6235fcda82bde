// Package judge judges congestion controllers on paths drawn at random
// from named families instead of on scenario files: a controller tuned on
// the files of bench/scenarios meets them again here only by chance.
//
// Generate draws one scenario (bench/scenario) from a family and a seed:
// the same family and seed give the same scenario, byte for byte. Judge
// runs every draw in the simulator (bench/sim) under every controller of a
// list — the same draw for each: the controller replaces the flows under
// test (the unpinned bulk flows, named test…), the cross traffic stays as
// drawn — and judges each run on its family's criteria (Criteria). It
// reports per family the pass rate of each criterion per controller, and a
// Pantheon-style leaderboard (Yan et al., "Pantheon: the training ground
// for Internet congestion-control research", USENIX ATC 2018): each
// controller's median goodput, p95 one-way delay and power over the draws,
// and over the draws of each trace.
//
// Seeds: develop on seeds 1–100, report on 1001–1100. A controller judged
// on the seeds it was tuned on tells nothing about the next path.
//
// # Families and their ranges
//
// U(a, b) is uniform, logU(a, b) log-uniform (rates and buffer depths are
// felt as ratios), {…} a uniform choice. BDP is rate × the base round trip
// (2 × delay); a FIFO of k BDP holds max(4, k·BDP ÷ 1000 B) packets. Paths
// are symmetric (the reverse path as the forward one) unless said. Times
// written as a fraction of D scale with Options.Scale; durations D are at
// scale 1.
//
//   - alone (D = 30 s): one flow under test alone. One-way delay U(5, 60)
//     ms; variant {trace, steps, walk, outage}. trace: one of Traces, its
//     direction {up, down} forward and the other backward, both from a
//     random point, MSS 1400; queue {FIFO of U(50, 400) packets, CoDel}.
//     The others: queue {FIFO of logU(0.5, 10) BDP, CoDel (5 ms, 100 ms,
//     1000 packets)}. steps: rate logU(1, 50) Mbit/s, then 1–3 steps at
//     U(0.2, 0.8)·D, each multiplying the rate by 2^U(−3, 3) (kept within
//     0.5–100 Mbit/s). walk: a rate walk between min logU(0.5, 5) Mbit/s
//     and min × logU(2, 20), each rate held U(100, 1000) ms × U(1, 4) at
//     most, the BDP taken at its mean rate, the reverse path at its max.
//     outage: rate logU(1, 50) Mbit/s, both directions lose everything
//     from U(0.3, 0.6)·D for U(0.5, 3) s.
//   - fillers (D = 40 s): the flow under test beside 1–4 buffer fillers,
//     each {cubic, reno, bbr}, each {loss-limited, receive-window-limited}.
//     Rate logU(2, 50) Mbit/s, one-way delay U(5, 50) ms, FIFO of
//     logU(0.5, 20) BDP. A receive-window-limited filler's max_window is
//     (BDP + fill × buffer) ÷ fillers, fill U(0.3, 0.9): together they keep
//     a standing queue of that fill and never overflow it. Order
//     {test-late: fillers from 0, the flow under test at U(0.15, 0.35)·D;
//     test-first: the flow under test at 0, fillers from U(0.1, 0.3)·D};
//     fillers start U(0, 0.05)·D apart.
//   - ownkind (D = 40 s): 2–5 flows of the controller under test, each
//     starting U(0, 0.1)·D after the one before, each with extra_delay
//     U(0, 50) ms (different round trips). One-way delay U(5, 40) ms; path
//     {a trace as in alone with a FIFO of U(100, 400) packets, rate
//     logU(2, 50) Mbit/s with a FIFO of logU(1, 5) BDP}.
//   - aqm (D = 40 s): the flow under test beside 1–4 NewReno flows (U(0, 0.025)·D
//     apart from 0) under {codel, fq_codel, cake} (Linux defaults: 5 ms,
//     100 ms, 1000 packets; cake best effort at the link rate). Rate
//     logU(5, 50) Mbit/s, one-way delay U(5, 50) ms; the flow under test
//     starts at U(0.1, 0.25)·D.
//   - jitter (D = 30 s): one flow alone. Rate logU(2, 50) Mbit/s, one-way
//     delay U(10, 100) ms, forward jitter U(1, 20) ms (order kept), FIFO of
//     logU(1, 5) BDP.
//   - loss (D = 40 s): one flow alone. Rate logU(1, 20) Mbit/s, RTT
//     U(100, 600) ms, forward random loss U(1, 3) %, FIFO of logU(1, 3) BDP.
//   - narrowack (D = 30 s): a download of logU(1, 5) Mbit/s whose ACKs
//     share a logU(32, 128) kbit/s uplink (a FIFO of U(10, 50) packets)
//     with the device's own telemetry: unresponsive packets of U(50, 200)
//     bytes at U(5, 20) % of the uplink. One-way delay U(20, 100) ms,
//     download FIFO of logU(1, 5) BDP.
//   - acp: a draw of {alone, fillers, ownkind, aqm, jitter, loss,
//     narrowack} with 1–2 ACP status-update sources added from 0 (updates
//     of U(64, 1024) bytes, generated at will).
//
// # Criteria
//
// The targets owd is held to, judged per draw (Criteria lists them with the share
// of draws that must pass). alone: seconds in competitive mode = 0 (every
// draw), power (goodput ÷ p95 one-way delay) ≥ the best of the other
// controllers in the run (90 %). fillers: the flow under test's share of
// the bulk bytes from the last start on ÷ its fair share ≥ 0.7 (90 %) and
// ≥ 0.5 (every draw). ownkind: Jain ≥ 0.95 (90 %), ≥ 0.8 (every draw), 0 s
// competitive. aqm: share ÷ fair ≥ 0.8 (90 %). jitter: 0 s competitive,
// goodput ÷ bbr's ≥ 0.8 (90 %). loss: goodput ÷ bbr's ≥ 0.8 (90 %).
// narrowack: the telemetry's packets delivered ≥ 90 %, p95 one-way delay
// ≤ bbr's (90 %). acp: the sources' mean age ≤ the same draw's with lazy
// sources, the elastic flows' goodput at most 10 % below theirs beside
// lazy sources, Jain between two sources' delivered update rates ≥ 0.95
// (every draw). A criterion against bbr does not apply to bbr itself, nor
// when bbr is not in the run.
//
// With Config.OracleRates, acp draws are also run with their sources at
// fixed rates (OracleGrid) and ACP's mean age must be ≤ 1.15 × the
// constrained oracle's (ConstrainedOracle: the best age among the rates
// that cost the elastic flows at most 10 %), on every draw. The oracle is
// a coarse grid on one draw, not freshbench sim --acp-sweep's refined
// grid over many seeds.
package judge
