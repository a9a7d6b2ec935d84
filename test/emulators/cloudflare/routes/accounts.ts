/** Resolution of `:account_id` in account-scoped paths. */
import { authorizeAccount } from '../auth.js';
import { CfErrors } from '../envelope.js';
import type { RouteContext } from '../router.js';
import type { Account } from '../store.js';

export function accountFor(ctx: RouteContext): Account {
  const account = ctx.store.accounts.get(ctx.params.account_id ?? '');
  if (!account) throw CfErrors.invalidIdentifier(`/client/v4${ctx.path}`);
  authorizeAccount(ctx.token, account.id);
  return account;
}
