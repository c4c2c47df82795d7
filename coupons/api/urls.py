from django.urls import path

from coupons.api import views

urlpatterns = [
    path("coupons", views.CouponListView.as_view(), name="coupons"),
    path("coupons/mine", views.MyCouponListView.as_view(), name="my-coupons"),
    path("coupons/redeem", views.CouponRedeemView.as_view(), name="coupon-redeem"),
    path("coupons/<id:template_id>/claim", views.CouponClaimView.as_view(), name="coupon-claim"),
]
