import { CanActivate, Injectable } from '@nestjs/common';
import { OutboxBoardModule, OutboxBoardOptionsError } from '../../lib/board';

@Injectable()
class AdminGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

function problemsOf(build: () => unknown): string[] {
  try {
    build();
  } catch (error) {
    if (error instanceof OutboxBoardOptionsError) return error.problems;
    throw error;
  }
  return [];
}

describe('OutboxBoardModule.forRoot() options', () => {
  it('refuses to mount without a guard, saying how to give one', () => {
    expect(problemsOf(() => OutboxBoardModule.forRoot({}))).toEqual([expect.stringMatching(/^guards: the board changes messages, so it needs a guard/)]);
    expect(problemsOf(() => OutboxBoardModule.forRoot({ guards: [] }))).toHaveLength(1);
  });

  it('mounts with a guard class or instance, or with allowUnauthenticated', () => {
    expect(problemsOf(() => OutboxBoardModule.forRoot({ guards: [AdminGuard] }))).toEqual([]);
    expect(problemsOf(() => OutboxBoardModule.forRoot({ guards: [new AdminGuard()] }))).toEqual([]);
    expect(problemsOf(() => OutboxBoardModule.forRoot({ allowUnauthenticated: true }))).toEqual([]);
  });

  it('names each bad option', () => {
    const problems = problemsOf(() =>
      OutboxBoardModule.forRoot({ guards: [{} as AdminGuard], path: '/board/', pageSize: 0, csrfSecret: 'short', displayLimit: 1.5, colour: 'red' } as never),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^path must be segments/),
        expect.stringMatching(/^pageSize/),
        expect.stringMatching(/^csrfSecret/),
        expect.stringMatching(/^displayLimit/),
        'colour is not an OutboxBoardModule option',
        expect.stringMatching(/^guards must be an array of guard classes or instances/),
      ]),
    );
  });
});
