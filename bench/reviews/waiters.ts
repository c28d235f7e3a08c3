/**
 * The waiting agents of the reviews bench, in a process of their own (so the
 * server's memory is measured without theirs): forked by bench/reviews/run.ts,
 * it is sent `{ base, key, ids, wait }`, holds one `GET /v1/decisions/:id?wait=`
 * per id at once, and sends back, for each, when its answer arrived (ms since
 * the epoch, sub-millisecond: performance.timeOrigin + performance.now()) and
 * the decision's status.
 */
interface Job {
  base: string;
  key: string;
  ids: string[];
  wait: number;
}

export interface WaiterResult {
  id: string;
  at: number;
  httpStatus: number;
  status: string;
}

const now = () => performance.timeOrigin + performance.now();

process.on('message', (message: Job) => {
  void (async () => {
    const results = await Promise.all(
      message.ids.map(async (id): Promise<WaiterResult> => {
        const r = await fetch(`${message.base}/v1/decisions/${id}?wait=${message.wait}`, {
          headers: { authorization: `Bearer ${message.key}` },
        });
        const at = now();
        const body = (await r.json()) as { status?: string };
        return { id, at, httpStatus: r.status, status: body.status ?? '?' };
      }),
    );
    process.send!({ results });
  })().catch((e: unknown) => process.send!({ error: String(e) }));
});
process.send!({ ready: true });
