import { Page } from '../ui';

export const RequestsPage = () => <Page title="Requests">{null}</Page>;
