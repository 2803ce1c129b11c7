// Prometheus through OpenTelemetry: eight workers share one gate whose `meter` feeds OTel's
// Prometheus exporter; the script then scrapes its own /metrics once and prints the odds_gate
// series. Everything stays on 127.0.0.1 (the fake Odds API, the metrics endpoint on a free
// port). In a service you would let the exporter serve its own endpoint instead:
//   new PrometheusExporter({ port: 9464 })   // scrape http://host:9464/metrics
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { createFetch } from '../pkg/index.js';
import { startFakeOddsApi } from '../pkg/demo/fake-odds-api.js';
import { runWorkers } from '../pkg/demo/workers.js';

const rate = { burst: 2, perSecond: 2 };
const api = await startFakeOddsApi(rate);
const exporter = new PrometheusExporter({ preventServerStart: true });
const provider = new MeterProvider({ readers: [exporter] });
const metricsServer = createServer((req, res) => exporter.getMetricsRequestHandler(req, res));
await new Promise((resolve) => metricsServer.listen(0, '127.0.0.1', resolve));

try {
  const fetchImpl = createFetch({ rate, meter: provider.getMeter('odds-gate') });
  const run = await runWorkers({ fetchImpl, baseUrl: api.baseUrl, apiKey: `demo-${randomUUID()}` });
  console.log(`eight workers: ${run.attempts} attempts, ${run.throttled} 429s, ${run.completed} completed\n`);

  const { port } = metricsServer.address();
  const scraped = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  // The series and their HELP/TYPE lines; histogram buckets left out for brevity.
  console.log(scraped.split('\n').filter((l) => /^(# (HELP|TYPE) )?odds_gate_/.test(l) && !/_bucket\{/.test(l)).join('\n'));
} finally {
  metricsServer.close();
  await provider.shutdown();
  await api.close();
}
