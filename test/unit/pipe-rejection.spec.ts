import { BadRequestException, InternalServerErrorException, UnprocessableEntityException } from '@nestjs/common';
import { InputRejectedError, NonRetryableError } from '../../lib';
import { judgedPipeRejection, markingMethodErrors } from '../../lib/inbox/pipe-rejection';
import { classifyFailure } from '../../lib/retry/error-classifier';

const validation = () => new BadRequestException(['orderId must be an integer number', 'property note should not exist']);

describe('a client error from the pipes of a stored delivery', () => {
  it('is given up at once, with what the pipe said', () => {
    const judged = judgedPipeRejection(validation(), false);
    expect(judged).toBeInstanceOf(InputRejectedError);
    expect(judged).toBeInstanceOf(NonRetryableError);
    expect(classifyFailure(judged)).toBe('fatal');
    expect((judged as Error).message).toBe("the method's pipes refused the input (400): orderId must be an integer number; property note should not exist");
  });

  it('is retried, with what the pipe said, under retryPipeRejections', () => {
    const judged = judgedPipeRejection(new UnprocessableEntityException('amount is negative'), true);
    expect(classifyFailure(judged)).toBe('retry');
    expect((judged as Error).message).toBe("the method's pipes refused the input (422): amount is negative");
  });

  it('leaves server errors and errors the method threw as they are', async () => {
    const serverError = new InternalServerErrorException();
    expect(judgedPipeRejection(serverError, false)).toBe(serverError);
    const thrown = validation();
    const method = markingMethodErrors(async () => {
      throw thrown;
    });
    await expect(method()).rejects.toBe(thrown);
    expect(judgedPipeRejection(thrown, false)).toBe(thrown);
  });
});
