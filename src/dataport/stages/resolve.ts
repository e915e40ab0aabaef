import type { AdmissionConfig } from '../../config/types.js';
import { LlmgwError } from '../../errors.js';
import type { EndpointTable } from '../../router/endpoint-table.js';
import type { Profile } from '../../router/scheduler/types.js';
import type { ModelRoute } from '../model-routes.js';
import type { Stage } from '../pipeline.js';
import { refuse } from '../refuse.js';
import { streamable } from '../streamed-answer.js';
import { maxTokensFault } from '../validation/index.js';

const PROFILE_HEADER = 'x-llmgw-profile';
const PRIORITY_HEADER = 'x-llmgw-priority';
const EMPTY = Buffer.alloc(0);

export interface ResolveInputs {
  /** Every name and alias a client may use → its route. */
  routes: ReadonlyMap<string, ModelRoute>;
  profiles: ReadonlyMap<string, Profile>;
  admission: AdmissionConfig;
  /** For the 404: every name a client may use. */
  names: readonly string[];
  /** Where the context length of a model's engines is read (`max_model_len` of /v1/models). */
  table: EndpointTable;
}

/**
 * The model (name or alias), the routing profile and the admission band. The band is
 * the profile's, else `x-llmgw-priority` where allowed, else the default (API keys will
 * come first). Also makes sure the engine reports usage on a stream, whatever the
 * client asked, so that accounting does not depend on the client.
 */
export function resolveStage(i: ResolveInputs): Stage {
  const bandNames = i.admission.bands.map((b) => b.name);
  const bandIndex = new Map(bandNames.map((n, k) => [n, k]));
  const defaultBand = i.admission.default_band ?? bandNames[Math.max(0, bandNames.length - 2)]!;
  const profileNames = [...i.profiles.keys()].join(', ');

  return {
    name: 'resolve',
    async run(ctx, next) {
      const { req, body, record } = ctx;
      const route = i.routes.get(body.model as string);
      if (!route) {
        return refuse(ctx, new LlmgwError('LLMGW_MODEL_NOT_FOUND', `the model '${String(body.model)}' does not exist; available: ${i.names.join(', ')}`), 'model');
      }
      ctx.route = route;
      // A completion that cannot fit the model's context is refused as vLLM would refuse it.
      const tooLong = ctx.path === '/v1/embeddings' ? null : maxTokensFault(body, i.table.maxModelLen(route.entry.name));
      if (tooLong) return refuse(ctx, new LlmgwError('LLMGW_CONTEXT_TOO_LONG', tooLong.message), tooLong.param);
      const asked = req.headers[PROFILE_HEADER];
      let profile = route.profile;
      if (typeof asked === 'string' && asked !== '') {
        const named = i.profiles.get(asked);
        if (!named) return refuse(ctx, new LlmgwError('LLMGW_INVALID_REQUEST', `${PROFILE_HEADER}: '${asked}' is not a routing profile; have: ${profileNames}`));
        profile = named;
      }
      ctx.profile = profile;
      record.profile = profile.name;

      ctx.band = -1;
      if (route.admission) {
        const h = req.headers[PRIORITY_HEADER];
        const name = profile.band ?? (i.admission.priority_header && typeof h === 'string' && h !== '' ? h : defaultBand);
        const band = bandIndex.get(name);
        if (band === undefined) return refuse(ctx, new LlmgwError('LLMGW_INVALID_REQUEST', `${PRIORITY_HEADER}: '${name}' is not a band; have: ${bandNames.join(', ')}`));
        ctx.band = band;
        record.band = name;
      }

      let edited = body.model !== route.entry.name;
      ctx.stripUsage = false;
      ctx.collect = !ctx.stream && route.entry.streamFromEngine && streamable(ctx.path, body);
      if (ctx.collect) {
        edited = true;
        body.stream = true;
        body.stream_options = { include_usage: true };
      } else if (ctx.stream && ctx.path !== '/v1/embeddings') {
        const so = body.stream_options;
        const isObject = typeof so === 'object' && so !== null && !Array.isArray(so);
        if (!(isObject && (so as { include_usage?: unknown }).include_usage === true)) {
          ctx.stripUsage = edited = true;
          body.stream_options = { ...(isObject ? so : {}), include_usage: true };
        }
      }
      // The raw body is sent on as it came when nothing in it had to change.
      if (edited) ctx.raw = EMPTY;
      return next();
    },
  };
}
