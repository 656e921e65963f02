// The cluster: every node with its state, every GPU a cell coloured by the team of the job that
// holds it (GET /nodes; each holder's team from GET /jobs/{id}, remembered: it never changes).
import { api } from '../api.js';
import { usePoll } from '../live.js';
import { Status, Team } from '../parts/common.jsx';
import { ago, teamColour } from '../parts/format.js';

const holders = new Map(); // job id -> {team, name, user}

async function loadCluster(signal) {
  const { nodes } = await api('/nodes', { signal });
  const missing = new Set();
  for (const node of nodes) {
    for (const gpu of node.gpus) if (gpu.job_id != null && !holders.has(gpu.job_id)) missing.add(gpu.job_id);
  }
  await Promise.all(
    [...missing].map(async (id) => {
      const job = await api(`/jobs/${id}`, { signal });
      holders.set(id, { team: job.team, name: job.name, user: job.user });
    }),
  );
  return nodes;
}

function nodeState(node) {
  if (node.drained) return 'drained';
  return node.state === 'READY' ? 'ready' : node.state.toLowerCase();
}

function GpuCell({ gpu }) {
  const holder = gpu.job_id == null ? null : holders.get(gpu.job_id);
  if (!holder) {
    return (
      <div class="gpu free" title={`GPU ${gpu.index} (${gpu.model}): free`}>
        <span class="gpu-index">{gpu.index}</span>
        <span class="muted">free</span>
      </div>
    );
  }
  return (
    <a
      class="gpu held"
      href={`#/jobs/${gpu.job_id}`}
      style={{ background: teamColour(holder.team) }}
      title={`GPU ${gpu.index}: job ${gpu.job_id} ${holder.name} (${holder.user}, team ${holder.team}), ${gpu.task}`}
    >
      <span class="gpu-index">{gpu.index}</span>
      <span>#{gpu.job_id}</span>
      <span class="gpu-task">{gpu.task}</span>
    </a>
  );
}

export function ClusterPage() {
  const state = usePoll(loadCluster, []);
  const nodes = state.data ?? [];
  const teams = new Set();
  let total = 0;
  let used = 0;
  for (const node of nodes) {
    for (const gpu of node.gpus) {
      total += 1;
      if (gpu.job_id != null) {
        used += 1;
        const holder = holders.get(gpu.job_id);
        if (holder) teams.add(holder.team);
      }
    }
  }
  return (
    <section data-testid="cluster-page">
      <h1>Cluster</h1>
      <Status state={state} />
      <p>
        {nodes.length} nodes, {used} of {total} GPUs in use
        {[...teams].sort().map((t) => (
          <>
            {' '}
            <Team name={t} />
          </>
        ))}
      </p>
      <div class="nodes">
        {nodes.map((node) => (
          <div class={`node node-${nodeState(node)}`} data-node={node.id}>
            <div class="node-head">
              <strong>{node.id}</strong>
              <span class={`node-state ${nodeState(node)}`}>{nodeState(node)}</span>
              <span class="muted">
                {node.address} · {node.allocated.gpus}/{node.gpus.length} GPUs · seen {ago(node.last_seen)}
              </span>
            </div>
            {node.drained && node.drain_reason && <p class="muted">drained: {node.drain_reason}</p>}
            <div class="gpus">
              {node.gpus.map((gpu) => (
                <GpuCell gpu={gpu} />
              ))}
              {node.gpus.length === 0 && <span class="muted">no GPUs</span>}
            </div>
          </div>
        ))}
      </div>
    </section>
  );
}
