import { Command } from 'clipanion';
import type { ModelAdmissionStats } from '../../messages/admission.js';
import { AdminViewCommand, formatTable } from '../admin-client.js';

/** What /admin/v1/admission returns. */
interface AdmissionView {
  enabled: boolean;
  models: ModelAdmissionStats[];
}

/** `llmgw ctl admission`: the admission queues per model and band, and why a band waits. */
export class CtlAdmissionCommand extends AdminViewCommand<AdmissionView> {
  static override paths = [['ctl', 'admission']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Show the admission queues: depth, oldest wait and outcomes per band, and why a band waits',
    details:
      'One line per model and band: requests queued now and how long the oldest has waited; admitted, shed (429), timed out (503) and cancelled since start; and why a request of the band arriving now would queue (empty: it would go at once). `--admin` and `--token` default to LLMGW_ADMIN and LLMGW_ADMIN_TOKEN.',
    examples: [
      ['Table', 'llmgw ctl admission --admin http://127.0.0.1:4001'],
      ['JSON', 'llmgw ctl admission --json'],
    ],
  });

  protected readonly apiPath = '/admin/v1/admission';
  protected render(view: AdmissionView): string {
    return view.enabled ? renderAdmission(view.models) : 'admission is off (router.admission.enabled: false): every request goes to an engine at once\n';
  }
}

export function renderAdmission(models: ModelAdmissionStats[]): string {
  const rows = [['MODEL', 'BAND', 'QUEUED', 'OLDEST', 'ADMITTED', 'SHED', 'TIMED-OUT', 'CANCELLED', 'RECALLED', 'WAITS BECAUSE']];
  for (const m of models) {
    for (const b of m.bands) {
      rows.push([
        m.model,
        b.band,
        String(b.queued),
        b.oldestWaitMs === null ? '-' : `${(b.oldestWaitMs / 1000).toFixed(1)}s`,
        String(b.admitted),
        String(b.shed),
        String(b.timedOut),
        String(b.cancelled),
        String(b.recalled),
        b.held ?? '',
      ]);
    }
  }
  const limits = models.map((m) => `${m.model}: lower bands keep at most ${m.adaptiveLimit} in flight per replica of unknown batch size while the first band is active (adaptive)`);
  return formatTable(rows) + limits.map((l) => `${l}\n`).join('');
}
