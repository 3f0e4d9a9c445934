import { Page } from '../ui';

export const WalletPage = () => <Page title="Wallet">{null}</Page>;
