// Command load is countersign's load test (make load): it builds the local
// stack (./infra/local), runs it as its own process on a fresh data
// directory in front of a recording upstream and with a webhook approver
// (both run here, on 127.0.0.1), and drives a mix of calls from concurrent
// agents, one credential each:
//
//   - auto: GET /contacts/{id}, executed at once (200);
//   - confirm: DELETE /contacts/{id}: 202, the link from the webhook, the
//     approve POST, the redemption (200, the upstream called once);
//   - denied: DELETE /accounts/{id}, a never-tier endpoint (403 blocked);
//   - review: POST /accounts/{id}/close (403 review_required, queued).
//
// Every call must get its expected answer and the upstream exactly the
// calls that ran. It prints p50 and p99 per kind and the throughput, and
// the gateway process's memory (RSS from /proc, split into anonymous and
// file-backed, and the live Go heap from GODEBUG=gctrace=1) before the
// first call, after half the calls and after all of them; the process must
// not grow with the number of calls once warm. It exits 1 if anything is
// off.
//
//	go run ./infra/load [-agents 50] [-calls 10000] [-bin PATH] [-keep]
package main
