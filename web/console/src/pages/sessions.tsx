import { Page } from '../ui';

export const SessionsPage = () => <Page title="Sessions">{null}</Page>;
