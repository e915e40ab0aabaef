// `llmgw ctl orgs|teams|projects create|list|show`: the tenancy tree above the keys.
import { Command, Option } from 'clipanion';
import type { LimitRow, Org, Project, ScopeKind, Team } from '../../messages/tenancy.js';
import { AdminViewCommand } from '../admin-client.js';
import { renderOrgs, renderProjects, renderShow, renderTeams } from '../tenancy-tables.js';

export const TENANCY_CONNECTION = '`--admin` and `--token` default to LLMGW_ADMIN and LLMGW_ADMIN_TOKEN. The server must run with tenancy.store set.';

const BASE = '/admin/v1/tenancy';

/** `ctl <plural> show REF`: one entity by name or id, and the limits set on it. */
abstract class ShowCommand extends AdminViewCommand<{ entity: Org | Team | Project; limits: LimitRow | null }> {
  ref = Option.String({ name: 'name-or-id' });
  protected abstract readonly kind: ScopeKind;
  protected get apiPath(): string {
    return `${BASE}/${this.kind}s/${encodeURIComponent(this.ref)}`;
  }
  protected render(view: { entity: Org | Team | Project; limits: LimitRow | null }): string {
    return renderShow(this.kind, view, Date.now());
  }
}

export class CtlOrgsCreateCommand extends AdminViewCommand<Org> {
  static override paths = [['ctl', 'orgs', 'create']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Create an organization: the top of the tenancy tree',
    details: `NAME is unique among organizations. ${TENANCY_CONNECTION}`,
    examples: [['Create acme', 'llmgw ctl orgs create acme']],
  });
  name = Option.String({ name: 'name' });
  protected override readonly method = 'POST';
  protected readonly apiPath = `${BASE}/orgs`;
  protected override get requestBody(): unknown {
    return { name: this.name };
  }
  protected render = (o: Org): string => renderOrgs([o]);
}

export class CtlOrgsListCommand extends AdminViewCommand<Org[]> {
  static override paths = [['ctl', 'orgs', 'list']];
  static override usage = Command.Usage({ category: 'ctl', description: 'List the organizations', details: TENANCY_CONNECTION });
  protected readonly apiPath = `${BASE}/orgs`;
  protected render = renderOrgs;
}

export class CtlOrgsShowCommand extends ShowCommand {
  static override paths = [['ctl', 'orgs', 'show']];
  static override usage = Command.Usage({ category: 'ctl', description: 'Show an organization and the limits set on it', details: TENANCY_CONNECTION });
  protected readonly kind = 'org';
}

export class CtlTeamsCreateCommand extends AdminViewCommand<Team> {
  static override paths = [['ctl', 'teams', 'create']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Create a team in an organization',
    details: `NAME is unique within its organization; --org takes its name or id. ${TENANCY_CONNECTION}`,
    examples: [['Create team ml in acme', 'llmgw ctl teams create ml --org acme']],
  });
  name = Option.String({ name: 'name' });
  org = Option.String('--org', { required: true, description: 'the organization (name or id)' });
  protected override readonly method = 'POST';
  protected readonly apiPath = `${BASE}/teams`;
  protected override get requestBody(): unknown {
    return { name: this.name, org: this.org };
  }
  protected render = (t: Team): string => renderTeams([t]);
}

export class CtlTeamsListCommand extends AdminViewCommand<Team[]> {
  static override paths = [['ctl', 'teams', 'list']];
  static override usage = Command.Usage({ category: 'ctl', description: 'List the teams, of every organization or of one', details: TENANCY_CONNECTION });
  org = Option.String('--org', { description: 'only the teams of this organization (name or id)' });
  protected get apiPath(): string {
    return this.org === undefined ? `${BASE}/teams` : `${BASE}/teams?${new URLSearchParams({ parent: this.org })}`;
  }
  protected render = renderTeams;
}

export class CtlTeamsShowCommand extends ShowCommand {
  static override paths = [['ctl', 'teams', 'show']];
  static override usage = Command.Usage({ category: 'ctl', description: 'Show a team and the limits set on it', details: TENANCY_CONNECTION });
  protected readonly kind = 'team';
}

export class CtlProjectsCreateCommand extends AdminViewCommand<Project> {
  static override paths = [['ctl', 'projects', 'create']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Create a project in a team: keys belong to projects',
    details: `NAME is unique within its team; --team takes its name or id. ${TENANCY_CONNECTION}`,
    examples: [['Create project chat in team ml', 'llmgw ctl projects create chat --team ml']],
  });
  name = Option.String({ name: 'name' });
  team = Option.String('--team', { required: true, description: 'the team (name or id)' });
  protected override readonly method = 'POST';
  protected readonly apiPath = `${BASE}/projects`;
  protected override get requestBody(): unknown {
    return { name: this.name, team: this.team };
  }
  protected render = (p: Project): string => renderProjects([p]);
}

export class CtlProjectsListCommand extends AdminViewCommand<Project[]> {
  static override paths = [['ctl', 'projects', 'list']];
  static override usage = Command.Usage({ category: 'ctl', description: 'List the projects, of every team or of one', details: TENANCY_CONNECTION });
  team = Option.String('--team', { description: 'only the projects of this team (name or id)' });
  protected get apiPath(): string {
    return this.team === undefined ? `${BASE}/projects` : `${BASE}/projects?${new URLSearchParams({ parent: this.team })}`;
  }
  protected render = renderProjects;
}

export class CtlProjectsShowCommand extends ShowCommand {
  static override paths = [['ctl', 'projects', 'show']];
  static override usage = Command.Usage({ category: 'ctl', description: 'Show a project and the limits set on it', details: TENANCY_CONNECTION });
  protected readonly kind = 'project';
}
